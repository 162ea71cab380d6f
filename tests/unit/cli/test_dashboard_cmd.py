"""``icetide dashboard``: help, and no listening beyond loopback without a token."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.cli.main import main


def test_dashboard_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    main(["dashboard", "--help"])
    out = capsys.readouterr().out
    assert "--port" in out and "--host" in out and "ICETIDE_DASHBOARD__TOKEN" in out


def test_another_host_without_a_token_is_refused_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICETIDE_HOME", str(tmp_path))
    monkeypatch.delenv("ICETIDE_DASHBOARD__TOKEN", raising=False)
    monkeypatch.delenv("ICETIDE_CONFIG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["dashboard", "--host", "0.0.0.0", "--port", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "ICETIDE_DASHBOARD__TOKEN" in err and "0.0.0.0" in err
