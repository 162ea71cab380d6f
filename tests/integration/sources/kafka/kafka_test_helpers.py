"""Helpers of the Kafka source integration tests (real Tansu broker, no mocks)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Producer


def produce_exact(bootstrap: str, topic: str, counts: dict[int, int], prefix: str = "m",
                  batch: int = 100) -> None:
    """Produce ``counts[p]`` messages to partition ``p``: value ``<prefix>-<p>-<i>``, key ``k<i>``.

    Messages go out in several small batches (linger 0) so the broker holds many record
    batches per partition, and the timestamp of message ``i`` is ``1_700_000_000_000 + i``.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0,
                         "batch.num.messages": batch, "acks": "all"})
    failures: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    for part, count in counts.items():
        for i in range(count):
            producer.produce(topic, f"{prefix}-{part}-{i}".encode(), key=f"k{i}".encode(),
                             partition=part, timestamp=1_700_000_000_000 + i,
                             on_delivery=report)
            if i % batch == batch - 1:
                producer.flush(10)
    assert producer.flush(10) == 0 and not failures, failures


class Records(logging.Handler):
    """Collects log records of some loggers while active."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, level: int = logging.WARNING) -> list[str]:
        return [r.getMessage() for r in list(self.records) if r.levelno >= level]

    def wait_for(self, pred: Callable[[list[str]], bool], timeout: float = 30.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msgs = self.messages()
            if pred(msgs):
                return msgs
            time.sleep(0.02)
        raise AssertionError(f"log condition not met within {timeout}s: {self.messages()}")


@contextmanager
def capture(names: Iterable[str]) -> Iterator[Records]:
    handler = Records()
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


class Background(threading.Thread):
    """Runs ``fn`` in a thread and keeps its result or exception."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:
            self.error = exc

    def outcome(self, timeout: float) -> Any:
        self.join(timeout)
        assert not self.is_alive(), f"still running after {timeout}s"
        if self.error is not None:
            raise self.error
        return self.result


def offsets(position: dict[str, object]) -> dict[str, object]:
    """A Kafka position without its cluster id: just the offsets per partition."""
    return {k: v for k, v in position.items() if k != "cluster"}
