"""``icetide trino`` and ``icetide sql --engine trino`` where no Trino runs (no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from icetide.cli.main import cli


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICETIDE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ICETIDE_METASTORE__PORT", "19999")
    for name in ("ICETIDE_CONFIG", "ICETIDE_TRINO__URI", "ICETIDE_TRINO__HOST"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def test_catalog_prints_the_file_to_copy(home: Path) -> None:
    out = CliRunner().invoke(cli, ["trino", "catalog"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "# etc/catalog/iceberg.properties: this lake for Trino"
    assert "hive.metastore.uri=thrift://127.0.0.1:19999" in lines
    assert "iceberg.security=read_only" in lines
    writable = CliRunner().invoke(cli, ["trino", "catalog", "--writable"])
    assert "iceberg.security" not in writable.output


def test_status_of_a_stopped_local_trino(home: Path) -> None:
    out = CliRunner().invoke(cli, ["trino", "status", "--format", "json"])
    assert out.exit_code == 0, out.output
    svc = json.loads(out.output)
    assert svc["local"] and not svc["running"] and svc["uri"] == "http://127.0.0.1:8080"
    stop = CliRunner().invoke(cli, ["trino", "stop"])
    assert stop.exit_code == 0 and "was not running" in stop.output


def test_sql_without_a_trino_says_how_to_get_one(home: Path) -> None:
    out = CliRunner().invoke(cli, ["sql", "--engine", "trino", "SELECT 1"])
    assert out.exit_code == 2  # icetide refused: nothing to run it on
    assert "icetide trino start" in out.output and "ICETIDE_TRINO__URI" in out.output


def test_a_configured_trino_has_no_local_server(home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICETIDE_TRINO__URI", "http://127.0.0.1:1")
    out = CliRunner().invoke(cli, ["trino", "start"])
    assert out.exit_code == 2 and "trino.uri is set" in out.output
    down = CliRunner().invoke(cli, ["sql", "--engine", "trino", "SELECT 1"])
    assert down.exit_code == 2 and "cannot reach Trino at http://127.0.0.1:1" in down.output


def test_only_loopback(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICETIDE_TRINO__HOST", "0.0.0.0")
    out = CliRunner().invoke(cli, ["trino", "start"])
    assert out.exit_code == 2 and "not a loopback address" in out.output
    assert not (home / "trino").exists()
