"""Who may bind where, and where the password comes from (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from icetide.config import Settings, SqlServerConfig, load_settings
from icetide.errors import ConfigError
from icetide.serving.auth import PASSWORD_ENV, check_exposure, is_loopback
from icetide.serving.thrift import hive_conf, pick_port


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.1.1", "localhost", "::1"])
def test_loopback_needs_no_password(host: str) -> None:
    assert is_loopback(host)
    check_exposure(SqlServerConfig(), host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "db.example.com", "::"])
def test_any_other_address_without_a_password_is_refused_naming_the_variable(host: str) -> None:
    with pytest.raises(ConfigError, match=rf"{PASSWORD_ENV}.*or bind to 127.0.0.1") as err:
        check_exposure(SqlServerConfig(), host)
    assert repr(host) in str(err.value)
    check_exposure(SqlServerConfig(password=SecretStr("pw")), host)


def test_an_empty_password_is_refused() -> None:
    with pytest.raises(ConfigError, match=f"{PASSWORD_ENV} is empty"):
        check_exposure(SqlServerConfig(password=SecretStr("")), "0.0.0.0")


def test_the_password_comes_from_the_environment_only(tmp_path: Path) -> None:
    settings = load_settings(environ={
        PASSWORD_ENV: "pa55", "ICETIDE_SQL_SERVER__HOST": "0.0.0.0",
        "ICETIDE_SQL_SERVER__PORT": "10001", "ICETIDE_SQL_SERVER__USER": "bi"})
    cfg = settings.sql_server
    assert cfg.password is not None and cfg.password.get_secret_value() == "pa55"
    assert (cfg.host, cfg.port, cfg.user) == ("0.0.0.0", 10001, "bi")
    assert "pa55" not in repr(settings) and "pa55" not in str(settings.model_dump())
    yaml_file = tmp_path / "icetide.yaml"
    yaml_file.write_text("sql_server:\n  password: pa55\n")
    with pytest.raises(ConfigError, match=f"remove it and set the environment variable "
                                          f"{PASSWORD_ENV}"):
        load_settings(yaml_file, environ={})
    with pytest.raises(ConfigError, match=f"ICETIDE_SQL_SERVER_PASSWORD is not read.*"
                                          f"{PASSWORD_ENV}"):
        load_settings(environ={"ICETIDE_SQL_SERVER_PASSWORD": "pa55"})
    yaml_file.write_text("sql_server:\n  bind: 0.0.0.0\n")
    with pytest.raises(ConfigError, match=r"unknown key 'sql_server\.bind'"):
        load_settings(yaml_file, environ={})


def test_hive_conf_keeps_hive_files_under_the_home_and_picks_the_auth(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    conf = hive_conf(settings, "127.0.0.1", 10005, "password")
    assert conf["hive.server2.thrift.port"] == "10005"
    assert conf["hive.server2.thrift.bind.host"] == "127.0.0.1"
    assert conf["hive.server2.authentication"] == "CUSTOM"
    assert hive_conf(settings, "127.0.0.1", 1, "none")["hive.server2.authentication"] == "NONE"
    for key in ("hive.exec.scratchdir", "hive.exec.local.scratchdir",
                "hive.metastore.warehouse.dir"):
        assert conf[key].startswith(str(tmp_path.resolve())), key


def test_a_taken_port_is_refused_and_zero_picks_a_free_one() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"127.0.0.1:{port}.*--port"):
            pick_port("127.0.0.1", port)
    assert pick_port("127.0.0.1", 0) > 0
