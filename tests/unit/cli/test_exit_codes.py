"""One exit-code scheme for every verb (docs/architecture.md, "The command line"): icetide
refusing bad configuration or input exits 2, an error the command found exits 1.

Run through the real entry point (``icetide.cli.main.main``), as the console script is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.cli.exits import PROBLEM, REFUSED
from icetide.cli.main import COMMANDS, main

PIPELINE = "<pipeline>"  # replaced by an existing folder

#: One invocation per verb (and per catalog sub-command): each reads the settings first.
VERBS: list[list[str]] = [
    ["broker", "start"],
    ["gen", "clicks", "-c", "1"],
    ["demo", "--duration", "1"],
    ["run", PIPELINE, "--once"],
    ["dry-run", PIPELINE],
    ["status"],
    ["dashboard"],
    ["seed", "dims"],
    ["cdc", "resnapshot", "db.t"],
    ["table", "refresh", "db.t"],
    ["catalog", "start"],
    ["catalog", "status"],
    ["catalog", "stop"],
    ["catalog", "migrate"],
    ["sql", "SELECT 1"],
    ["sql", "SELECT 1", "--engine", "duckdb"],
    ["tables"],
    ["describe", "db.t"],
    ["maintain"],
    ["call", "system.rewrite_data_files(table => 'db.t')"],
    ["serve", "sql"],
    ["jars", "list"],
    ["trino", "status"],
]


def _exit_code(argv: list[str], tmp_path: Path) -> int:
    argv = [str(tmp_path) if a == PIPELINE else a for a in argv]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


def test_every_verb_is_covered() -> None:
    assert {argv[0] for argv in VERBS} == set(COMMANDS)


@pytest.mark.parametrize("argv", VERBS, ids=lambda argv: " ".join(argv[:2]))
def test_bad_configuration_exits_2(argv: list[str], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "icetide.yaml"
    config.write_text("catalog:\n  nmae: lake\n")  # a misspelt key
    assert _exit_code([*argv, "--config", str(config)], tmp_path) == REFUSED
    err = capsys.readouterr().err
    assert "catalog.nmae" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", VERBS, ids=lambda argv: " ".join(argv[:2]))
def test_missing_config_file_exits_2(argv: list[str], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    assert _exit_code([*argv, "--config", str(missing)], tmp_path) == REFUSED
    assert "nope.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("argv", VERBS, ids=lambda argv: " ".join(argv[:2]))
def test_unknown_option_exits_2(argv: list[str], tmp_path: Path) -> None:
    assert _exit_code([*argv, "--no-such-option"], tmp_path) == REFUSED


@pytest.fixture
def hadoop_home(tmp_path: Path) -> Path:
    """A config of an empty Hadoop-catalog lake: the readers answer without a JVM."""
    config = tmp_path / "icetide.yaml"
    config.write_text(f"home: {tmp_path / 'home'}\ncatalog:\n  type: hadoop\n")
    (tmp_path / "home" / "warehouse").mkdir(parents=True)
    return config


def test_describe_of_a_missing_table_is_refused(hadoop_home: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = _exit_code(["describe", "db.missing", "--config", str(hadoop_home)], tmp_path)
    assert code == REFUSED and "db.missing" in capsys.readouterr().err


def test_an_error_in_the_query_exits_1(hadoop_home: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = _exit_code(["sql", "SELECT no_such_column", "--engine", "duckdb",
                       "--config", str(hadoop_home)], tmp_path)
    assert code == PROBLEM and "no_such_column" in capsys.readouterr().err


def test_a_missing_table_in_the_query_exits_1(hadoop_home: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """As Spark's "table or view not found": an error in the SQL, whatever the engine."""
    code = _exit_code(["sql", "SELECT * FROM db.missing", "--engine", "duckdb",
                       "--config", str(hadoop_home)], tmp_path)
    assert code == PROBLEM and "db.missing" in capsys.readouterr().err
