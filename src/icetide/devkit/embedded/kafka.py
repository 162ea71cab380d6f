"""An embedded Apache Kafka broker: KRaft combined mode (broker + controller, no ZooKeeper).

``EmbeddedKafka(port, data_dir)`` runs ``kafka.Kafka`` (``org.apache.kafka:kafka_2.13``,
the ``kafka-broker`` group of ``runtime/jars.toml``, resolved by ``icetide jars resolve``
into the jar cache and never put on a Spark class path) in a JVM of its own. Every
listener is on 127.0.0.1 only: the client listener on ``port`` (a free port when
``None``), the controller listener and, with ``scram=ScramUser(...)``, a SASL/SCRAM
listener on free ports. Retention is off unless asked (``retention_ms``, or a topic's
``retention.ms``): Kafka deletes by record timestamp, and the tests' records are stamped
in 2023. The log dirs live in ``<data_dir>/logs`` and survive a restart
on the same ``data_dir`` (the first start formats them, as ``kafka-storage.sh format``
does; the SCRAM credential is written then too). Output goes to ``<data_dir>/broker.log``.

Unlike the in-memory Tansu broker (:mod:`icetide.devkit.embedded.broker`) it keeps data
on disk, reports the true high watermark, has transactions (``read_committed``), deletes
by retention and ``DeleteRecords``, and authenticates with SASL/SCRAM. It costs a JVM:
start-up and memory are measured by ``python -m benchmarks.brokers`` (docs/stack.md).
"""

from __future__ import annotations

import base64
import logging
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin._metadata import ClusterMetadata

from icetide.config import Settings, load_settings
from icetide.devkit.embedded.broker_process import BrokerProcess
from icetide.devkit.embedded.process import LOOPBACK, free_port, port_in_use
from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)

JAR_GROUP = "kafka-broker"
MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
SCRAM_MECHANISM = "SCRAM-SHA-256"
#: a small heap: the broker of the tests and the demo holds little (Kafka's own default is 1 GB)
JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError",
               "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")


@dataclass(frozen=True)
class ScramUser:
    """The one SASL/SCRAM user of the SASL listener (``SCRAM-SHA-256``)."""

    name: str
    password: str


def kafka_classpath(settings: Settings | None = None) -> str:
    """The broker's class path: the ``kafka-broker`` jars from the jar cache or ``jars.dir``
    of ``settings`` (default: the configuration in effect), resolving them once when the
    cache lacks them, as every JVM dependency of icetide."""
    from icetide.runtime.classpath import group_jars

    jars = group_jars(settings or load_settings(), [JAR_GROUP])
    return os.pathsep.join(str(p) for p in jars)


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars),
    never starting with ``-`` (as Kafka's ``Uuid.randomUuid``): ``kafka-storage format
    -t -xyz…`` reads such an id as an option and fails (1 start in 64 did)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not found.startswith("-"):
            return found


class EmbeddedKafka(BrokerProcess):
    """An Apache Kafka broker (KRaft, one node) on loopback with private log dirs."""

    NAME = "Apache Kafka"
    POLL_S = 0.1
    #: SIGTERM is a controlled shutdown; the log dirs stay for the next start
    STOP_TIMEOUT_S = 30.0

    def __init__(self, port: int | None, data_dir: str | Path, *, scram: ScramUser | None = None,
                 retention_ms: int = -1, settings: Settings | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.retention_ms = retention_ms
        self.data_dir = Path(data_dir).resolve()
        self.scram = scram
        self.settings = settings
        self.controller_port = free_port()
        self.sasl_port = free_port() if scram is not None else None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def sasl_bootstrap(self) -> str:
        """``127.0.0.1:<sasl port>``: the SASL/SCRAM listener (only with ``scram``)."""
        if self.sasl_port is None:
            raise RuntimeSetupError("this EmbeddedKafka has no SASL listener: pass scram=")
        return f"{LOOPBACK}:{self.sasl_port}"

    @property
    def log_dirs(self) -> Path:
        return self.data_dir / "logs"

    def properties(self) -> dict[str, str]:
        """``server.properties``: KRaft combined mode, loopback listeners, one replica."""
        listeners = {"PLAINTEXT": self.port, "CONTROLLER": self.controller_port}
        if self.sasl_port is not None:
            listeners["SASL_PLAINTEXT"] = self.sasl_port
        props = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@{LOOPBACK}:{self.controller_port}",
            "listeners": ",".join(f"{n}://{LOOPBACK}:{p}" for n, p in listeners.items()),
            "advertised.listeners": ",".join(
                f"{n}://{LOOPBACK}:{p}" for n, p in listeners.items() if n != "CONTROLLER"),
            "listener.security.protocol.map": ",".join(
                f"{n}:{'PLAINTEXT' if n == 'CONTROLLER' else n}" for n in listeners),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.log_dirs), "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # -1: keep every record (as Tansu does), whatever its timestamp; a topic's own
            # retention.ms still applies, checked every second (Kafka's default: 5 minutes)
            "log.retention.ms": str(self.retention_ms),
            "log.retention.check.interval.ms": "1000",
        }
        if self.scram is not None:
            props["sasl.enabled.mechanisms"] = SCRAM_MECHANISM
            props[f"listener.name.sasl_plaintext.{SCRAM_MECHANISM.lower()}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;")
        return props

    def _write_properties(self) -> Path:
        path = self.data_dir / "server.properties"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def _java(self, main: str, *args: str) -> list[str]:
        from icetide.runtime.java import check_java

        return [str(check_java().executable), *JVM_OPTIONS, "-cp",
                kafka_classpath(self.settings), main, *args]

    def _format(self, config: Path) -> None:
        """Format the log dirs once (``kafka-storage.sh format``), with the SCRAM user."""
        if (self.log_dirs / "meta.properties").is_file():
            return
        args = ["format", "-t", new_cluster_id(), "-c", str(config)]
        if self.scram is not None:
            args += ["--add-scram", f"{SCRAM_MECHANISM}=[name={self.scram.name},"
                                    f"password={self.scram.password}]"]
        done = subprocess.run(self._java(STORAGE_TOOL, *args), capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            out = (done.stdout + done.stderr).strip().splitlines()[-10:]
            raise RuntimeSetupError(
                f"formatting the Kafka log dirs {self.log_dirs} failed (exit "
                f"{done.returncode}): {' | '.join(out)}; remove {self.log_dirs} to start afresh")

    def start(self, timeout: float = 90.0) -> str:
        """Format (first time), start the broker and wait until it answers; returns
        :attr:`bootstrap`."""
        if self.running:
            return self.bootstrap
        for port in (self.port, self.controller_port, self.sasl_port):
            if port is not None and port_in_use(port):
                raise RuntimeSetupError(
                    f"port {port} on {LOOPBACK} is already in use: stop whatever listens "
                    "there or choose another port (None picks a free one)")
        config = self._write_properties()
        self._format(config)
        return self._launch(self._java(MAIN, str(config)), timeout)

    def _answered(self, metadata: ClusterMetadata) -> bool:
        return bool(metadata.brokers)
