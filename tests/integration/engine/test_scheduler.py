"""The pipeline scheduler on real Spark and Iceberg: an upstream commit starts the next
hop at once (not at its trigger), and a loose freshness target switches a table to
scheduled refreshes in a real run."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import MaintenanceConfig, Settings
from icetide.engine.run import PipelineRun
from icetide.flows.loop import BatchResult
from icetide.lake import commit
from icetide.maintainer import MaintenanceReport
from icetide.pipelines import load_pipeline

pytestmark = pytest.mark.spark

HOPS = '''
from icetide import pipelines as dp

@dp.table(name="sch_dwd.hop1")
def hop1():
    return dp.read_stream("sch_src.events")

@dp.table(name="sch_dws.hop2")
def hop2():
    return dp.read_stream("sch_dwd.hop1")
'''

KEPT = '''
from icetide import pipelines as dp

@dp.table(name="sch_dwd.kept")
def kept():
    return dp.read_stream("sch_src.kept")
'''

LOOSE = '''
from icetide import pipelines as dp

@dp.table(name="sch_dws.loose", freshness="15 seconds")
def loose():
    return dp.read_stream("sch_src.slow")
'''


def _pipeline(tmp_path: Path, name: str, code: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(f"name: {name}\ncatalog: lake\n")
    (folder / "flows.py").write_text(code)
    return folder


def _source(spark: SparkSession, table: str) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.sch_src")
    spark.sql(f"CREATE TABLE IF NOT EXISTS lake.sch_src.{table} (id int) USING iceberg")
    spark.sql(f"INSERT INTO lake.sch_src.{table} VALUES (1), (2)")


def _commit_times(spark: SparkSession, ident: str) -> list[int]:
    return [int(r[0].timestamp() * 1000) for r in spark.sql(
        f"SELECT committed_at FROM {ident}.snapshots ORDER BY committed_at").collect()]


def _run(spark: SparkSession, settings: Settings, folder: Path, trigger: float,
         on_batch: Callable[[BatchResult], None], stop: threading.Event,
         on_maintained: Callable[[MaintenanceReport], None] | None = None) -> None:
    """The pipeline continuously until a callback sets ``stop`` (at most 120 s)."""
    timer = threading.Timer(120, stop.set)
    timer.start()
    try:
        with PipelineRun(spark, settings, load_pipeline(folder),
                         trigger_interval=trigger) as run:
            run.run_forever(stop, on_batch, on_maintained=on_maintained)
    finally:
        timer.cancel()


def test_an_upstream_commit_starts_the_next_hop_at_once(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _source(spark, "events")
    stop = threading.Event()

    def on_batch(result: BatchResult) -> None:
        if result.flow == "sch_dws.hop2":
            stop.set()

    _run(spark, icetide_settings, _pipeline(tmp_path, "hops", HOPS), 60, on_batch, stop)
    [hop1] = _commit_times(spark, "lake.sch_dwd.hop1")
    [hop2] = _commit_times(spark, "lake.sch_dws.hop2")
    # with a timer per flow, hop2's first look finds nothing and the next is 60 s later
    assert 0 < hop2 - hop1 < 30_000
    assert spark.table("lake.sch_dws.hop2").count() == 2


def test_a_loose_target_runs_scheduled_refreshes(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _source(spark, "slow")
    stop = threading.Event()
    batches: list[BatchResult] = []

    def on_batch(result: BatchResult) -> None:
        batches.append(result)
        if len(batches) == 1:
            spark.sql("INSERT INTO lake.sch_src.slow VALUES (3)")
        else:
            stop.set()

    _run(spark, icetide_settings, _pipeline(tmp_path, "loose", LOOSE), 0.5, on_batch, stop)
    assert len(batches) == 2
    marker = commit.last_marker(spark, "lake.sch_dws.loose", "sch_dws.loose")
    assert marker is not None
    assert marker.extra["freshness.mode"] == "scheduled"
    first, second = _commit_times(spark, "lake.sch_dws.loose")
    # a refresh every target − 1.5 × cost instead of every 0.5 s trigger
    assert 5_000 < second - first < 30_000
    assert spark.table("lake.sch_dws.loose").count() == 3


def test_the_run_maintains_what_it_writes_and_reports_each_pass(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _source(spark, "kept")
    for _ in range(3):  # one small file per insert
        spark.sql("INSERT INTO lake.sch_src.kept VALUES (3)")
    policy = MaintenanceConfig(interval=2, min_input_files=2)
    settings = icetide_settings.model_copy(update={"maintenance": policy})
    stop = threading.Event()
    reports: list[MaintenanceReport] = []

    def on_batch(result: BatchResult) -> None:
        spark.sql("INSERT INTO lake.sch_src.kept VALUES (4)")  # a second small file

    def on_maintained(report: MaintenanceReport) -> None:
        reports.append(report)
        if report.table == "lake.sch_dwd.kept" and report.before.data_files >= 2:
            stop.set()

    _run(spark, settings, _pipeline(tmp_path, "kept", KEPT), 0.5, on_batch, stop,
         on_maintained)
    report = next(r for r in reports if r.table == "lake.sch_dwd.kept"
                  and r.before.data_files >= 2)
    assert list(report.step_seconds) == ["compaction", "deletes", "manifests", "expiry",
                                         "orphans"]
    compaction = report.actions.compaction
    assert compaction is not None and compaction.done is not None and report.after is not None
    # what the rewrite did: the files before and after it may differ by a batch that
    # committed during the pass (seen: 3 → 3 with 2 rows more, the 3 small files → 1)
    done = compaction.done
    assert done.rewritten_data_files_count >= 2, done
    assert done.added_data_files_count < done.rewritten_data_files_count, done
    line = report.summary()
    assert line.startswith("lake.sch_dwd.kept in ") and "compaction " in line
    assert f"data files {report.before.data_files} → {report.after.data_files}" in line
    with PipelineRun(spark, settings, load_pipeline(tmp_path / "kept")) as run:
        run.run_once()  # the rows inserted after the last batch

    def ids(table: str) -> list[int]:
        return sorted(r[0] for r in spark.table(table).collect())
    assert ids("lake.sch_dwd.kept") == ids("lake.sch_src.kept")  # compaction lost nothing
