"""The embedded Apache Kafka's configuration (no JVM started: the lifecycle is in
tests/integration/devkit/embedded/test_embedded_kafka.py)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.kafka import EmbeddedKafka, ScramUser, new_cluster_id
from icetide.devkit.embedded.kinds import embedded_broker
from icetide.errors import RuntimeSetupError


def test_every_listener_is_on_loopback_and_kraft_runs_both_roles(tmp_path: Path) -> None:
    kafka = EmbeddedKafka(None, tmp_path, scram=ScramUser("u", "p"))
    props = kafka.properties()
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{kafka.controller_port}"
    assert props["listeners"] == (f"PLAINTEXT://127.0.0.1:{kafka.port},CONTROLLER://127.0.0.1:"
                                  f"{kafka.controller_port},SASL_PLAINTEXT://127.0.0.1:"
                                  f"{kafka.sasl_port}")
    assert "CONTROLLER" not in props["advertised.listeners"]
    assert props["log.dirs"] == str(tmp_path.resolve() / "logs")
    assert props["log.retention.ms"] == "-1"  # kept, whatever the records' timestamps
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-256"
    assert "p" not in props.values()  # the password goes to the format step only
    assert kafka.sasl_bootstrap == f"127.0.0.1:{kafka.sasl_port}"


def test_without_scram_there_is_no_sasl_listener(tmp_path: Path) -> None:
    kafka = EmbeddedKafka(9, tmp_path)
    assert "SASL" not in kafka.properties()["listeners"] and kafka.bootstrap == "127.0.0.1:9"
    with pytest.raises(RuntimeSetupError, match="no SASL listener: pass scram="):
        _ = kafka.sasl_bootstrap


def test_a_cluster_id_is_16_bytes_url_safe() -> None:
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    # one in 64 random ids starts with '-', which kafka-storage takes for an option
    assert not any(i.startswith("-") for i in ids)


def test_brokers_by_name(tmp_path: Path) -> None:
    assert isinstance(embedded_broker("tansu", tmp_path), EmbeddedBroker)
    assert isinstance(embedded_broker("kafka", tmp_path, 19092), EmbeddedKafka)
    with pytest.raises(RuntimeSetupError, match=r"unknown embedded broker 'redpanda'.*tansu"):
        embedded_broker("redpanda", tmp_path)
    with pytest.raises(RuntimeSetupError, match="Tansu has no SASL/SCRAM"):
        embedded_broker("tansu", tmp_path, scram=ScramUser("u", "p"))
