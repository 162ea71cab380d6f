"""One prefix for every failure (``error:``), and messages without Python lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.cli.main import main

EXAMPLE = Path(__file__).parents[3] / "examples" / "clickstream"


def _fail(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    code = exited.value.code
    assert isinstance(code, int)
    return code, capsys.readouterr().err


def test_an_unknown_flow_is_named_plainly_before_spark_starts(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("ICETIDE_HOME", str(tmp_path))
    code, err = _fail(["run", str(EXAMPLE), "--flow", "nosuchflow", "--once"], capsys)
    assert code == 2
    assert err.startswith("error: no flow named nosuchflow in pipeline 'clickstream'; "
                          "its flows: ")
    assert "[" not in err and "'nosuchflow'" not in err and "clickevent" in err
    assert "Traceback" not in err


def test_click_usage_errors_carry_the_same_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _fail(["sql", "SELECT 1", "--engine", "nosuch"], capsys)
    assert code == 2
    assert "Usage: icetide sql" in err and "Try 'icetide sql --help' for help." in err
    assert err.rstrip().splitlines()[-1].startswith("error: Invalid value for '--engine'")
    assert "Error:" not in err
