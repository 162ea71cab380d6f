"""Table-to-table flows: dp.read_stream over appends and over a primary-key changelog."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.analyzer import spark_dry_run
from icetide.engine.run import PipelineRun
from icetide.errors import SourceError
from icetide.pipelines import load_pipeline

pytestmark = pytest.mark.spark

PIPELINE = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp

dp.create_streaming_table("inc_dws.views", primary_key=["productId"],
                          merge_engine=dp.aggregation(views="sum"), changelog=True)

@dp.append_flow(target="inc_dws.views")
def count_views():
    return (dp.read_stream("inc_src.clicks").groupBy("productId")
            .agg(F.count(F.lit(1)).alias("views")))

@dp.table(name="inc_dws.view_changes")
def view_changes():
    return dp.read_stream("inc_dws.views").select("productId", "views", "_op")
'''


def _pipeline(tmp_path: Path) -> Path:
    (tmp_path / "icetide-pipeline.yml").write_text("name: inc\ncatalog: lake\ndatabase: inc_dws\n")
    (tmp_path / "flows.py").write_text(PIPELINE)
    return tmp_path


def _append(spark: SparkSession, rows: list[str]) -> None:
    spark.createDataFrame([(r,) for r in rows], "productId string").writeTo(
        "lake.inc_src.clicks").append()


def test_incremental_aggregation_and_changelog(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.inc_src")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.inc_src.clicks (productId string) USING iceberg")
    _append(spark, ["1", "1", "2"])
    graph = load_pipeline(_pipeline(tmp_path))
    PipelineRun(spark, icetide_settings, graph).run_once()
    views = dict(spark.table("lake.inc_dws.views").collect())
    assert views == {"1": 2, "2": 1}

    _append(spark, ["1", "3"])
    _append(spark, ["3"])
    done = PipelineRun(spark, icetide_settings, graph).run_once()
    assert dict(spark.table("lake.inc_dws.views").collect()) == {"1": 3, "2": 1, "3": 2}
    assert PipelineRun(spark, icetide_settings, graph).run_once() == {
        name: [] for name in done}  # a replay finds nothing new: no double counting

    changes = sorted(tuple(r) for r in spark.table("lake.inc_dws.view_changes").collect())
    assert changes == [("1", 2, "+I"), ("1", 2, "-U"), ("1", 3, "+U"), ("2", 1, "+I"),
                       ("3", 2, "+I")]


NO_CHANGELOG = '''
from icetide import pipelines as dp

@dp.table(name="nochl_out.copy")
def copy():
    return dp.read_stream("nochl_src.members")
'''


def test_streaming_a_primary_key_table_without_changelog_never_misses_a_merge(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    """Appended rows stream; the first MERGE that changes rows stops the flow with an error
    naming changelog=True instead of being skipped silently."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.nochl_src")
    spark.sql("CREATE TABLE lake.nochl_src.members (uid string NOT NULL, level int) "
              "USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    spark.sql("ALTER TABLE lake.nochl_src.members SET IDENTIFIER FIELDS uid")
    spark.sql("INSERT INTO lake.nochl_src.members VALUES ('a', 1), ('b', 2)")
    (tmp_path / "icetide-pipeline.yml").write_text("name: nochl\ncatalog: lake\n")
    (tmp_path / "flows.py").write_text(NO_CHANGELOG)
    graph = load_pipeline(tmp_path)
    with PipelineRun(spark, icetide_settings, graph) as run:
        run.run_once()
    assert spark.table("lake.nochl_out.copy").count() == 2
    spark.sql("INSERT INTO lake.nochl_src.members VALUES ('c', 3)")  # an append still streams
    spark.sql("MERGE INTO lake.nochl_src.members t USING (SELECT 'a' uid, 9 level) s "
              "ON t.uid = s.uid WHEN MATCHED THEN UPDATE SET level = s.level")
    with pytest.raises(SourceError, match=r"without a changelog.*changelog=True"), \
            PipelineRun(spark, icetide_settings, graph) as run:
        run.run_once()
    assert spark.table("lake.nochl_out.copy").count() == 2  # nothing committed past it


def test_dry_run_refuses_streaming_a_declared_primary_key_table_without_changelog(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "icetide-pipeline.yml").write_text("name: nochl2\ncatalog: lake\n")
    (tmp_path / "flows.py").write_text(
        "from icetide import pipelines as dp\n"
        "dp.create_streaming_table('nochl2.users', primary_key=['uid'], "
        "schema='uid string, level int')\n"
        "@dp.table(name='nochl2.copy')\n"
        "def copy():\n    return dp.read_stream('nochl2.users')\n")
    report = spark_dry_run(spark, icetide_settings, load_pipeline(tmp_path))
    assert not report.ok
    assert any("changelog=True" in p.message for p in report.problems), report.format()
