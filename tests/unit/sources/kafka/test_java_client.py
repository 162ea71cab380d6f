"""kafka.properties (librdkafka names) → options of Spark's Kafka source (Java names)."""

from __future__ import annotations

import pytest

from icetide.errors import ConfigError
from icetide.sources.kafka.java_client import java_options

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_defaults_read_committed_and_carry_the_bootstrap() -> None:
    assert java_options("b:9092", {}) == {"kafka.bootstrap.servers": "b:9092",
                                          "kafka.isolation.level": "read_committed"}
    assert java_options("b:9092", {"isolation.level": "read_uncommitted"})[
        "kafka.isolation.level"] == "read_uncommitted"


@pytest.mark.parametrize(("mechanism", "module"), [
    ("SCRAM-SHA-256", SCRAM), ("scram-sha-512", SCRAM),
    ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule")])
def test_sasl_credentials_become_the_jaas_config(mechanism: str, module: str) -> None:
    options = java_options("b:9096", {
        "security.protocol": "sasl_ssl", "sasl.mechanisms": mechanism,
        "sasl.username": "icetide", "sasl.password": 'p"w\\d'})
    assert options == {
        "kafka.bootstrap.servers": "b:9096", "kafka.isolation.level": "read_committed",
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": mechanism,
        "kafka.sasl.jaas.config": f'{module} required username="icetide" password="p\\"w\\\\d";'}


def test_tls_and_renamed_settings() -> None:
    options = java_options("b:9093", {
        "security.protocol": "SSL", "ssl.ca.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "none", "fetch.wait.max.ms": "100",
        "fetch.message.max.bytes": "1048576", "client.id": "me"})
    assert options == {
        "kafka.bootstrap.servers": "b:9093", "kafka.isolation.level": "read_committed",
        "kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/ca.pem",
        "kafka.ssl.endpoint.identification.algorithm": "", "kafka.fetch.max.wait.ms": "100",
        "kafka.max.partition.fetch.bytes": "1048576", "kafka.client.id": "me"}


def test_reader_internals_are_dropped_and_tuning_is_ignored_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    options = java_options("b:1", {"group.id": "g", "auto.offset.reset": "error",
                                   "enable.auto.commit": "false",
                                   "fetch.queue.backoff.ms": "10"})
    assert options == {"kafka.bootstrap.servers": "b:1", "kafka.isolation.level": "read_committed"}
    assert "fetch.queue.backoff.ms" in caplog.text and "ignores" in caplog.text
    caplog.clear()
    java_options("b:2", {"fetch.queue.backoff.ms": "20"})
    assert "fetch.queue.backoff.ms" not in caplog.text  # named once per process


@pytest.mark.parametrize(("properties", "named"), [
    ({"ssl.key.location": "/k.pem"}, "ssl.key.location"),
    ({"sasl.oauthbearer.config": "x"}, "sasl.oauthbearer.config"),
    ({"sasl.mechanism": "GSSAPI", "sasl.username": "u"}, "GSSAPI"),
    ({"sasl.username": "u", "sasl.password": "secret-1"}, "None"),
])
def test_untranslatable_security_settings_are_refused(properties: dict[str, str],
                                                      named: str) -> None:
    with pytest.raises(ConfigError, match=r"kafka\.reader=python") as err:
        java_options("b:1", properties)
    assert named in str(err.value) and "secret-1" not in str(err.value)
