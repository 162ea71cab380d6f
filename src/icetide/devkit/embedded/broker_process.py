"""What the two embedded brokers (Tansu, Apache Kafka) share: their process on loopback,
waiting until it answers a metadata request, stopping it (also when the interpreter
exits), and killing it on purpose."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from confluent_kafka.admin._metadata import ClusterMetadata

from icetide.devkit.embedded.process import LOOPBACK, stop_process
from icetide.errors import RuntimeSetupError
from icetide.runtime.retry import wait_until

log = logging.getLogger(__name__)

_RUNNING: set[BrokerProcess] = set()


def _stop_all() -> None:
    for broker in list(_RUNNING):
        broker.stop()


atexit.register(_stop_all)


class BrokerProcess:
    """A broker process: subclasses give ``NAME``, ``port``, ``data_dir`` and the command."""

    NAME: ClassVar[str]
    #: seconds between two "are you up?" requests while it starts
    POLL_S: ClassVar[float] = 0.05
    STOP_TIMEOUT_S: ClassVar[float] = 10.0
    port: int
    data_dir: Path
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``: the ``bootstrap.servers`` of its plaintext listener."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "broker.log"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    def _launch(self, cmd: list[str], timeout: float) -> str:
        """Start ``cmd`` in its own session, output to the log; wait until it answers."""
        with self.log_path.open("ab") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL,
                                          start_new_session=True)  # Ctrl-C reaches us only
        _RUNNING.add(self)
        log.info("started %s pid %d on %s (log %s)", self.NAME, self._proc.pid, self.bootstrap,
                 self.log_path)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self.bootstrap

    def _tail(self, lines: int = 10) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _answered(self, metadata: ClusterMetadata) -> bool:
        """Whether a metadata answer means it serves (Apache Kafka: once it lists a broker)."""
        return True

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

        def answers() -> bool:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise RuntimeSetupError(
                    f"{self.NAME} on port {self.port} exited with code {code} during "
                    f"start-up; last lines of {self.log_path}:\n{self._tail()}")
            return self._answered(admin.list_topics(timeout=1.0))

        wait_until(answers, timeout=timeout, interval=self.POLL_S, ignoring=KafkaException,
                   what=f"{self.NAME} on {self.bootstrap}",
                   detail=lambda: f"see {self.log_path}")

    def wait(self) -> int:
        """Block until the broker process exits; returns its exit code."""
        return 0 if self._proc is None else self._proc.wait()

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, SIGKILL after ``timeout`` (default ``STOP_TIMEOUT_S``)."""
        proc, self._proc = self._proc, None
        _RUNNING.discard(self)
        if proc is None or proc.poll() is not None:
            return
        stop_process(proc, self.NAME, self.STOP_TIMEOUT_S if timeout is None else timeout)
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
