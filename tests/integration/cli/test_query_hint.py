"""``icetide sql`` on Spark by default: a read DuckDB can answer, shown as a table, gets a
hint on stderr naming the fast engine; results on stdout are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from icetide.cli.query_cmds import sql
from icetide.config import Settings

pytestmark = pytest.mark.spark


def test_a_default_spark_read_hints_at_duckdb_and_nothing_else_does(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.hint")
    spark.sql("CREATE OR REPLACE TABLE lake.hint.t (n int) USING iceberg")
    spark.sql("INSERT INTO lake.hint.t VALUES (1), (2)")
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json",
                                                                 exclude_none=True)))

    def run(*args: str, fmt: str = "table") -> tuple[str, str]:
        result = CliRunner().invoke(sql, [*args, "--format", fmt, "--config", str(config)])
        assert result.exit_code == 0, result.output
        return result.stdout, result.stderr

    out, err = run("SELECT sum(n) AS s FROM hint.t")
    assert "│ 3 │" in out and "hint" not in out
    assert err.startswith("hint: this read took ")
    assert "`--engine duckdb` answers reads without one, in about a second" in err
    assert run("SELECT sum(n) AS s FROM hint.t", "--engine", "duckdb") == (out, "")
    assert run("SELECT sum(n) AS s FROM hint.t", "--engine", "spark")[1] == ""  # chosen
    assert run("SELECT sum(n) AS s FROM hint.t", fmt="json")[1] == ""  # read by a program
    assert run("INSERT INTO hint.t VALUES (3)")[1] == ""  # DuckDB cannot write
    assert run("SELECT n FROM hint.t DISTRIBUTE BY n")[1] == ""  # Spark's dialect only
