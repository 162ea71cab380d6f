"""``sql``, ``tables`` and ``describe`` through click, on the session's real Spark and lake."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from icetide.cli.query_cmds import describe, sql, tables
from icetide.config import Settings

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def config(
    spark: SparkSession, icetide_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A config file that loads to exactly the session's settings, and a small table."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS cli")
    spark.sql("CREATE TABLE IF NOT EXISTS cli.events (id BIGINT, kind STRING) USING iceberg")
    spark.sql("INSERT INTO cli.events VALUES (1, 'view'), (2, 'click'), (3, 'view')")
    spark.sql("CREATE TABLE IF NOT EXISTS cli.typed (id BIGINT, at TIMESTAMP, "
              "local TIMESTAMP_NTZ, day DATE, price DECIMAL(10,2), ok BOOLEAN, "
              "tags ARRAY<STRING>, attrs MAP<STRING, INT>) USING iceberg")
    spark.sql("INSERT INTO cli.typed VALUES (1, TIMESTAMP'2026-11-23 03:00:00', "
              "TIMESTAMP_NTZ'2026-11-23 04:00:00', DATE'2026-11-23', 12.50, true, "
              "array('a', 'b'), map('k', 1))")
    path = tmp_path_factory.mktemp("cli") / "icetide.yaml"
    path.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json", exclude_none=True)))
    return str(path)


def _invoke(command: object, *args: str) -> str:
    result = CliRunner().invoke(command, list(args))  # type: ignore[arg-type]
    assert result.exit_code == 0, result.output
    return result.output


def test_help_of_every_command() -> None:
    for command in (sql, tables, describe):
        assert "--config" in _invoke(command, "--help")
    assert "--engine" in _invoke(sql, "--help")


def test_sql_on_spark_as_json(config: str) -> None:
    out = _invoke(sql, "SELECT kind, count(*) AS n FROM cli.events GROUP BY kind ORDER BY kind",
                  "--format", "json", "--config", config)
    assert json.loads(out) == [{"kind": "click", "n": 1}, {"kind": "view", "n": 2}]


def test_sql_on_duckdb_as_csv(config: str) -> None:
    out = _invoke(sql, "SELECT id, kind FROM lake.cli.events ORDER BY id", "--engine", "duckdb",
                  "--format", "csv", "--config", config)
    assert list(csv.reader(io.StringIO(out))) == [
        ["id", "kind"], ["1", "view"], ["2", "click"], ["3", "view"],
    ]


def test_sql_table_format_and_limit(config: str) -> None:
    result = CliRunner().invoke(
        sql, ["SELECT * FROM cli.events ORDER BY id", "--limit", "2", "--config", config]
    )
    assert result.exit_code == 0, result.output
    assert "click" in result.output and "│" in result.output
    assert "showing the first 2 rows" in result.output


def test_sql_errors_are_one_line(config: str) -> None:
    for engine in ("spark", "duckdb"):
        result = CliRunner().invoke(
            sql, ["SELECT * FROM cli.nope", "--engine", engine, "--config", config]
        )
        assert result.exit_code == 1
        assert result.output.startswith("error: ")
        assert "nope" in result.output.lower() and "Traceback" not in result.output


def test_duckdb_reads_every_column_type(config: str) -> None:
    """timestamptz needs pytz in DuckDB's Python client (it failed to import before)."""
    [row] = json.loads(_invoke(sql, "SELECT * FROM cli.typed", "--engine", "duckdb",
                               "--format", "json", "--config", config))
    assert row["id"] == 1 and row["at"].startswith("2026-11-23 03:00:00")
    assert row["local"] == "2026-11-23 04:00:00" and row["day"] == "2026-11-23"
    assert row["price"] == "12.50" and row["ok"] is True and row["tags"] == ["a", "b"]


def test_duckdb_errors_are_shown_whole(config: str) -> None:
    result = CliRunner().invoke(
        sql, ["SELECT kindd FROM cli.events", "--engine", "duckdb", "--config", config])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "kindd" in result.output and "LINE 1:" in result.output  # the second line too


def test_tables_lists_rows_and_snapshots(config: str) -> None:
    listed = {t["table"]: t for t in json.loads(_invoke(tables, "--format", "json",
                                                        "--config", config))}
    events = listed["cli.events"]
    assert events["rows"] == 3 and events["snapshots"] == 1 and events["last_commit"]
    assert "cli.events" in _invoke(tables, "--config", config)


def test_describe(config: str) -> None:
    info = json.loads(_invoke(describe, "cli.events", "--format", "json", "--config", config))
    assert [(f["name"], f["type"]) for f in info["schema"]] == [("id", "long"), ("kind", "string")]
    assert info["snapshots"][0]["summary"]["added-records"] == "3"
    text = _invoke(describe, "lake.cli.events", "--config", config)
    for part in ("Schema", "unpartitioned", "Properties", "snapshots", "added-records=3"):
        assert part in text
    missing = CliRunner().invoke(describe, ["cli.missing", "--config", config])
    assert missing.exit_code == 2 and "icetide tables" in missing.output  # refused: bad input


def test_config_file_must_exist(tmp_path: Path) -> None:
    result = CliRunner().invoke(tables, ["--config", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "does not exist" in result.output  # refused: bad config


def test_tables_and_describe_without_a_terminal(spark: SparkSession, config: str) -> None:
    """Piped output never cuts a name into fragments; describe shows nullability and ISO
    commit times."""
    name = "cli.a_table_whose_name_is_long_enough_to_be_folded_by_a_narrow_console"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} (id BIGINT NOT NULL, note STRING) "
              "USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'x')")
    assert name.split(".", 1)[1] in _invoke(tables, "--config", config)
    out = _invoke(describe, name, "--config", config)
    assert "nullable" in out
    lines = [line for line in out.splitlines() if " id " in line or " note " in line]
    assert any(" no " in line for line in lines if " id " in line)
    assert any(" yes " in line for line in lines if " note " in line)
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", out)
