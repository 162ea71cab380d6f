"""``icetide dry-run``: the Spark analyzer on tmp pipelines; nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from icetide.cli.dryrun_cmd import dry_run
from icetide.config import Settings
from icetide.engine.analyzer import spark_dry_run
from icetide.pipelines import load_pipeline

pytestmark = pytest.mark.spark

# A Kafka source on a port nothing listens on: the dry run must never contact it.
SPEC = ("name: {name}\ncatalog: lake\ndatabase: dr_db\n"
        "sources:\n  clicks: {{type: kafka, topic: dr_clicks, bootstrap: '127.0.0.1:9'}}\n")

GOOD = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp
from icetide.sources import kafka

@dp.table(name="dr_db.raw", partition_cols=["days(eventTime)"])
def raw():
    rows = kafka.read("clicks", schema="uid string, updateTime bigint",
                      dead_letter="dr_db.raw_dlq")
    return rows.select("uid", F.timestamp_millis("updateTime").alias("eventTime"))

@dp.table(name="dr_db.per_user", schema="uid string, n bigint")
def per_user():
    return dp.read_stream("dr_db.raw").groupBy("uid").agg(F.count(F.lit(1)).alias("n"))
'''

BAD = GOOD.replace('schema="uid string, n bigint"', 'schema="uid string, n int"') + '''

@dp.table(name="dr_db.orphan")
def orphan():
    return dp.read("dr_elsewhere.nothing").select("x")
'''


def _pipeline(tmp_path: Path, name: str, code: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(SPEC.format(name=name))
    (folder / "flows.py").write_text(code)
    return folder


def _config(tmp_path: Path, settings: Settings) -> str:
    path = tmp_path / "icetide.yaml"
    path.write_text(yaml.safe_dump(settings.model_dump(mode="json", exclude_none=True)))
    return str(path)


def test_good_pipeline_passes_without_creating_anything(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    graph = load_pipeline(_pipeline(tmp_path, "dr_good", GOOD))
    report = spark_dry_run(spark, icetide_settings, graph)
    assert report.ok, report.format()
    assert report.order == ("dr_db.raw", "dr_db.per_user")  # discovered read_stream edge
    assert dict(report.schemas["dr_db.per_user"]) == {"uid": "string", "n": "bigint"}
    for table in ("raw", "raw_dlq", "per_user"):
        assert not spark.catalog.tableExists(f"lake.dr_db.{table}")
    result = CliRunner().invoke(dry_run, ["--config", _config(tmp_path, icetide_settings),
                                          str(tmp_path / "dr_good")])
    assert result.exit_code == 0, result.output
    assert "OK" in result.output


def test_missing_reference_and_schema_mismatch_fail_with_a_report(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    graph = load_pipeline(_pipeline(tmp_path, "dr_bad", BAD))
    report = spark_dry_run(spark, icetide_settings, graph)
    codes = {(p.code, p.subject) for p in report.errors}
    assert ("missing_input", "dr_db.orphan") in codes
    assert ("schema_mismatch", "dr_db.per_user") in codes
    mismatch = next(p for p in report.errors if p.code == "schema_mismatch")
    assert "column n is declared int but the query produces bigint" in mismatch.message
    missing = next(p for p in report.errors if p.code == "missing_input")
    assert "dr_elsewhere.nothing" in missing.message

    result = CliRunner().invoke(dry_run, ["--config", _config(tmp_path, icetide_settings),
                                          str(tmp_path / "dr_bad")])
    assert result.exit_code == 1
    assert "dr_elsewhere.nothing" in result.output and "error(s)" in result.output
    assert not spark.catalog.tableExists("lake.dr_db.orphan")


def test_an_existing_target_the_next_run_evolves_is_reported_as_a_change(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.dr_db")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.dr_db.fixed (uid string) USING iceberg")
    code = GOOD + '''

@dp.table(name="dr_db.fixed")
def fixed():
    return dp.read_stream("dr_db.raw").select("uid", "eventTime")
'''
    report = spark_dry_run(spark, icetide_settings,
                           load_pipeline(_pipeline(tmp_path, "dr_existing", code)))
    assert report.ok, report.format()
    [change] = report.changes
    assert change.code == "evolve" and change.subject == "dr_db.fixed"
    assert change.message.endswith("table dr_db.fixed: add column eventTime timestamp")
    assert "1 change(s) at the next run" in report.format()
    assert "eventTime" not in {f.name for f in spark.table("lake.dr_db.fixed").schema.fields}


CYCLE = '''
from icetide import pipelines as dp

@dp.table(name="dr_db.ping")
def ping():
    return dp.read_stream("dr_db.pong")

@dp.table(name="dr_db.pong")
def pong():
    return dp.read_stream("dr_db.ping")
'''


def test_a_cycle_between_flows_is_reported(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    report = spark_dry_run(spark, icetide_settings,
                           load_pipeline(_pipeline(tmp_path, "dr_cycle", CYCLE)))
    assert [p.code for p in report.errors] == ["cycle"]
    assert "dr_db.ping → dr_db.pong → dr_db.ping" in report.errors[0].message
    assert report.order is None
