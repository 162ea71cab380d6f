"""``icetide serve sql``: help, and the refusals that need no JVM."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from icetide.cli.main import cli, main


def test_serve_and_serve_sql_answer_help() -> None:
    runner = CliRunner()
    group = runner.invoke(cli, ["serve", "--help"])
    assert group.exit_code == 0 and "sql" in group.output
    sub = runner.invoke(cli, ["serve", "sql", "--help"])
    assert sub.exit_code == 0, sub.output
    assert "jdbc:hive2://127.0.0.1:10000/default" in sub.output
    assert "ICETIDE_SQL_SERVER__PASSWORD" in sub.output
    assert "serve" in runner.invoke(cli, ["--help"]).output
    demo = runner.invoke(cli, ["demo", "--help"])
    assert demo.exit_code == 0 and "--sql-server" in demo.output


def test_binding_beyond_loopback_without_a_password_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICETIDE_HOME", str(tmp_path / "home"))
    for name in ("ICETIDE_SQL_SERVER__PASSWORD", "ICETIDE_SQL_SERVER__HOST", "ICETIDE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "sql", "--host", "0.0.0.0", "--port", "0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "ICETIDE_SQL_SERVER__PASSWORD" in err and "'0.0.0.0'" in err
    assert not (tmp_path / "home").exists()  # refused before Spark (or anything) started
