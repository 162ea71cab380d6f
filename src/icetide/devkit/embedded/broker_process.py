"""What the two embedded brokers (Tansu, Apache Kafka) share: their process on loopback,
waiting until it answers a metadata request, stopping it (also when the interpreter
exits), and killing it on purpose."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from confluent_kafka.admin._metadata import ClusterMetadata

from icetide.runtime.local_server import LOOPBACK, LocalServer
from icetide.runtime.paths import Below

log = logging.getLogger(__name__)

_RUNNING: set[BrokerProcess] = set()


def _stop_all() -> None:
    for broker in list(_RUNNING):
        broker.stop()


atexit.register(_stop_all)


class BrokerProcess(LocalServer):
    """A broker process: subclasses give ``NAME``, ``port``, ``data_dir`` and the command."""

    #: seconds between two "are you up?" requests while it starts
    POLL_S: ClassVar[float] = 0.05
    STOP_TIMEOUT_S: ClassVar[float] = 10.0
    port: int
    data_dir: Path
    log_path = Below("broker.log", root="data_dir")

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``: the ``bootstrap.servers`` of its plaintext listener."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    def _launch(self, cmd: list[str], timeout: float) -> str:
        """Start ``cmd``; wait until it answers a metadata request."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        proc = self.spawn(cmd)
        _RUNNING.add(self)
        log.info("started %s pid %d on %s (log %s)", self.NAME, proc.pid, self.bootstrap,
                 self.log_path)
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        self.await_ready(lambda: self._answered(admin.list_topics(timeout=1.0)),
                         timeout=timeout, what=f"{self.NAME} on {self.bootstrap}",
                         interval=self.POLL_S, ignoring=KafkaException)
        return self.bootstrap

    def _answered(self, metadata: ClusterMetadata) -> bool:
        """Whether a metadata answer means it serves (Apache Kafka: once it lists a broker)."""
        return True

    def wait(self) -> int:
        """Block until the broker process exits; returns its exit code."""
        return 0 if self._proc is None else self._proc.wait()

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, SIGKILL after ``timeout`` (default ``STOP_TIMEOUT_S``)."""
        _RUNNING.discard(self)
        was_running = self.running
        super().stop(timeout)
        if was_running:
            log.info("stopped %s on %s", self.NAME, self.bootstrap)

    def kill(self) -> None:
        """Kill the broker abruptly (SIGKILL), e.g. to simulate a crash in tests."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, 9)
            proc.wait()
        self.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self, timeout: float = 15.0) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"{type(self).__name__}({self.bootstrap}, {state}, data_dir={str(self.data_dir)!r})"
