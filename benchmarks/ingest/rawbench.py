"""Benchmark (a): the raw single-process ceiling of Kafka ingest on this machine.

One confluent-kafka consumer reads every partition of a topic from its low to its high
watermark with ``consume(10000)`` and decodes each value with ``orjson`` — no Spark.
What Spark-based ingest achieves is judged against this number.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from icetide.errors import SourceError
from icetide.sources.kafka.client import BULK_READ, consumer_config
from icetide.sources.kafka.watermarks import WatermarkClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RawBenchResult:
    """Messages read and decoded, and how fast."""

    messages: int
    decoded: int  # values that were valid JSON
    seconds: float

    @property
    def rate(self) -> float:
        """Messages per second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def from_offsets(marks: Mapping[int, tuple[int, int]], since: Mapping[int, int] | None
                 ) -> dict[int, tuple[int, int]]:
    """Per partition ``(first offset to read, high watermark)``: ``since``, else the low
    watermark."""
    since = since or {}
    return {p: (max(low, since.get(p, low)), high) for p, (low, high) in marks.items()}


def _decode(msgs: list[Any]) -> int:
    ok = 0
    loads = orjson.loads
    for m in msgs:
        try:
            loads(m.value())
            ok += 1
        except orjson.JSONDecodeError:
            pass
    return ok


def raw_consume(
    bootstrap: str, topic: str, *, decode: bool = True,
    properties: Mapping[str, str] | None = None, timeout: float = 60.0,
    since: Mapping[int, int] | None = None,
) -> RawBenchResult:
    """Read (and decode) everything currently in ``topic`` (from the offsets ``since``,
    per partition, where given); timed from the first request."""
    from confluent_kafka import Consumer, TopicPartition

    marks = from_offsets(WatermarkClient(topic, bootstrap, properties).watermarks(), since)
    total = sum(high - low for low, high in marks.values())
    consumer = Consumer(consumer_config(bootstrap, {**BULK_READ, **(properties or {})}))
    began = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in marks.items()])
    seen = decoded = 0
    deadline = time.monotonic() + timeout
    try:
        while seen < total:
            if time.monotonic() > deadline:
                raise SourceError(
                    f"raw benchmark on topic {topic!r} read {seen} of {total} messages in "
                    f"{timeout:.0f}s: check the broker at {bootstrap} or raise the timeout")
            msgs = [m for m in consumer.consume(10_000, 1.0) if m.error() is None]
            seen += len(msgs)
            if decode:
                decoded += _decode(msgs)
        seconds = time.perf_counter() - began
    finally:
        consumer.close()
    log.info("raw consume of %r: %d messages in %.2fs (%.0f/s)", topic, seen, seconds,
             seen / seconds)
    return RawBenchResult(seen, decoded, seconds)


def raw_consume_rate(bootstrap: str, topic: str) -> float:
    """Messages per second one process consumes and orjson-decodes from ``topic``."""
    return raw_consume(bootstrap, topic).rate
