"""Config: YAML → frozen model → env overlay; unknown keys and secrets in YAML rejected."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from icetide.config import load_settings, parse_duration
from icetide.errors import ConfigError


def test_defaults_without_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(None, environ={})
    assert s.spark.master == "local[*]"
    assert s.catalog.type == "hive" and s.catalog.uri is None  # icetide's own metastore
    assert (s.metastore.host, s.metastore.port) == ("127.0.0.1", 9083)
    assert s.home == Path(".icetide")


def test_yaml_then_env_overlay(tmp_path: Path) -> None:
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("spark:\n  master: spark://h:7077\nflows:\n  trigger_interval: 2s\n")
    s = load_settings(cfg, environ={"ICETIDE_SPARK__APP_NAME": "x", "ICETIDE_HOME": "/tmp/h"})
    assert s.spark.master == "spark://h:7077"
    assert s.spark.app_name == "x"
    assert s.flows.trigger_interval == 2.0
    assert s.home == Path("/tmp/h")


def test_env_overrides_yaml(tmp_path: Path) -> None:
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("kafka:\n  bootstrap: a:1\n")
    s = load_settings(cfg, environ={"ICETIDE_KAFKA__BOOTSTRAP": "b:2"})
    assert s.kafka.bootstrap == "b:2"


def test_unknown_key_names_file_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("spark:\n  mastr: local\n")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, environ={})
    assert str(cfg) in str(err.value) and "spark.mastr" in str(err.value)


def test_secret_in_yaml_is_rejected_and_env_named(tmp_path: Path) -> None:
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("catalog:\n  type: jdbc\n  password: hunter2\n")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, environ={})
    assert "ICETIDE_CATALOG__PASSWORD" in str(err.value)
    assert "hunter2" not in str(err.value)


def test_secret_from_env_is_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(None, environ={"ICETIDE_CATALOG__PASSWORD": "hunter2"})
    assert s.catalog.password is not None
    assert s.catalog.password.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(s)


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.yaml", environ={})


def test_settings_are_frozen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(None, environ={})
    with pytest.raises(ValidationError):
        s.spark.master = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("500ms", 0.5), ("10s", 10), ("2 minutes", 120), ("1h", 3600), ("3", 3), (1.5, 1.5)],
)
def test_parse_duration(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_parse_duration_error_names_value() -> None:
    with pytest.raises(ConfigError, match="'soon'"):
        parse_duration("soon")


def test_a_bad_duration_names_its_environment_variable() -> None:
    with pytest.raises(ConfigError, match=r"ICETIDE_FLOWS__TRIGGER_INTERVAL='5 sekunden'"):
        load_settings(environ={"ICETIDE_FLOWS__TRIGGER_INTERVAL": "5 sekunden"})


def test_a_bad_duration_in_yaml_names_file_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("flows:\n  trigger_interval: soon\n")
    with pytest.raises(ConfigError, match=r"icetide.yaml: flows.trigger_interval='soon'"):
        load_settings(cfg, environ={})


def test_a_setting_with_one_underscore_is_refused_not_ignored() -> None:
    with pytest.raises(ConfigError, match=r"ICETIDE_KAFKA_BOOTSTRAP is not read.*"
                                          r"ICETIDE_KAFKA__BOOTSTRAP"):
        load_settings(environ={"ICETIDE_KAFKA_BOOTSTRAP": "127.0.0.1:9092"})
    # variables that are not settings keep working
    load_settings(environ={"ICETIDE_TEST_RUN": "1", "ICETIDE_HOME": "/tmp/h"})
    with pytest.raises(ConfigError, match="ICETIDE_JAR_CACHE is no longer read: set "
                                          "ICETIDE_JARS__CACHE"):
        load_settings(environ={"ICETIDE_JAR_CACHE": "/tmp/jars"})


def test_kafka_client_secrets_come_from_the_environment(tmp_path: Path) -> None:
    """SASL/TLS client properties pass through to the readers; their secrets only from env
    (``_`` in the variable name stands for librdkafka's ``.``)."""
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("kafka:\n  bootstrap: b1:9093,b2:9093\n  properties:\n"
                   "    security.protocol: SASL_SSL\n    sasl.mechanism: SCRAM-SHA-512\n"
                   "    sasl.username: icetide\n    ssl.ca.location: /etc/ssl/ca.pem\n")
    s = load_settings(cfg, environ={"ICETIDE_KAFKA__PROPERTIES__SASL_PASSWORD": "k-secret"})
    assert s.kafka.properties == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "icetide", "ssl.ca.location": "/etc/ssl/ca.pem",
        "sasl.password": "k-secret"}
    for key in ("sasl.password", "ssl.key.password", "sasl.oauthbearer.client.secret"):
        cfg.write_text(f"kafka:\n  properties:\n    {key}: x\n")
        env = "ICETIDE_KAFKA__PROPERTIES__" + key.upper().replace(".", "_")
        with pytest.raises(ConfigError, match=rf"'kafka.properties.{key}'.*{env}"):
            load_settings(cfg, environ={})


def test_kafka_reader_defaults_to_python_and_the_environment_picks_jvm() -> None:
    assert load_settings(None, environ={}).kafka.reader == "python"
    s = load_settings(None, environ={"ICETIDE_KAFKA__READER": "jvm"})
    assert s.kafka.reader == "jvm"
    with pytest.raises(ConfigError, match=r"(?s)ICETIDE_KAFKA__READER.*rust"):
        load_settings(None, environ={"ICETIDE_KAFKA__READER": "rust"})
