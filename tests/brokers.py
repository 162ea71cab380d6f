"""Which broker a Kafka test runs against: the embedded Tansu broker, Apache Kafka, or both.

The session fixture ``broker`` (tests/conftest.py) is Tansu unless a test is marked with
:data:`BOTH` (once per kind: the light tests of the exactly-once, dead-letter and Debezium
families) or :data:`APACHE` (Apache Kafka only: the heavy e2e tests and what only a real
broker has — transactions, retention, SASL/SCRAM). Each kind is started once per session.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Literal

import pytest

from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.kafka import EmbeddedKafka, ScramUser

BrokerKind = Literal["tansu", "kafka"]
KINDS: tuple[BrokerKind, ...] = ("tansu", "kafka")

#: the SCRAM user of the session's Apache Kafka (a fresh password each session)
SCRAM = ScramUser("icetide-test", secrets.token_urlsafe(16))

BOTH = pytest.mark.parametrize("broker", KINDS, indirect=True)
APACHE = pytest.mark.parametrize("broker", ["kafka"], indirect=True)


def start_broker(kind: BrokerKind, data_dir: Path, port: int | None = None,
                 scram: ScramUser | None = None) -> EmbeddedBroker | EmbeddedKafka:
    """A new, not yet started broker of ``kind`` (use it as a context manager)."""
    if kind == "tansu":
        if scram is not None:
            raise ValueError("Tansu has no SASL/SCRAM: use kind='kafka'")
        return EmbeddedBroker(port, data_dir)
    if kind == "kafka":
        return EmbeddedKafka(port, data_dir, scram=scram)
    raise ValueError(f"unknown broker kind {kind!r}: use one of {KINDS}")
