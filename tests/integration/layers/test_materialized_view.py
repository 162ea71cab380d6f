"""@dp.materialized_view refresh: planned from input snapshot ids, one overwrite commit."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.run import PipelineRun
from icetide.lake.commit import load_table
from icetide.model.markers import Marker
from icetide.pipelines import load_pipeline

pytestmark = pytest.mark.spark

PIPELINE = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp

@dp.materialized_view(name="{db}.totals")
def totals():
    return dp.read("{db}.events").groupBy("k").agg(F.sum("v").alias("total"))
'''


def _setup(spark: SparkSession, tmp_path: Path) -> tuple[str, Path]:
    db = f"mv_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{db}")
    spark.sql(f"CREATE TABLE lake.{db}.events (k string, v int) USING iceberg")
    (tmp_path / "icetide-pipeline.yml").write_text(f"name: mv\ncatalog: lake\ndatabase: {db}\n")
    (tmp_path / "flows.py").write_text(PIPELINE.replace("{db}", db))
    return db, tmp_path


def _add(spark: SparkSession, db: str, rows: list[tuple[str, int]]) -> None:
    spark.createDataFrame(rows, "k string, v int").writeTo(f"lake.{db}.events").append()


def _totals(spark: SparkSession, db: str) -> dict[str, int]:
    return {r[0]: r[1] for r in spark.table(f"lake.{db}.totals").collect()}


def test_refresh_once_replay_and_marker(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    db, folder = _setup(spark, tmp_path)
    graph = load_pipeline(folder)
    PipelineRun(spark, icetide_settings, graph).run_once()  # empty input: marker only
    assert _totals(spark, db) == {}
    assert PipelineRun(spark, icetide_settings, graph).run_once() == {f"{db}.totals": []}

    _add(spark, db, [("a", 1), ("b", 2)])
    _add(spark, db, [("a", 3)])
    PipelineRun(spark, icetide_settings, graph).run_once()
    assert _totals(spark, db) == {"a": 4, "b": 2}
    table = load_table(spark, f"lake.{db}.totals")
    snap = table.currentSnapshot()
    marker = Marker.from_summary(dict(snap.summary()))
    events_id = load_table(spark, f"lake.{db}.events").currentSnapshot().snapshotId()
    assert snap.operation() == "overwrite"
    assert marker is not None and marker.end == {
        f"refresh:lake.{db}.totals": {f"lake.{db}.events": events_id}}

    before = snap.snapshotId()
    assert PipelineRun(spark, icetide_settings, graph).run_once() == {f"{db}.totals": []}
    assert load_table(spark, f"lake.{db}.totals").currentSnapshot().snapshotId() == before

    spark.sql(f"DELETE FROM lake.{db}.events WHERE k = 'b'")
    PipelineRun(spark, icetide_settings, graph).run_once()
    assert _totals(spark, db) == {"a": 4}


def test_refresh_in_continuous_mode(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    db, folder = _setup(spark, tmp_path)
    _add(spark, db, [("a", 1)])
    run = PipelineRun(spark, icetide_settings, load_pipeline(folder), trigger_interval=0.5)
    stop = threading.Event()
    worker = threading.Thread(target=run.run_forever, args=(stop,), daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                spark.catalog.tableExists(f"lake.{db}.totals") and _totals(spark, db)):
            time.sleep(0.5)
        assert _totals(spark, db) == {"a": 1}
        _add(spark, db, [("a", 5), ("c", 1)])
        while time.monotonic() < deadline and _totals(spark, db) != {"a": 6, "c": 1}:
            time.sleep(0.5)
        assert _totals(spark, db) == {"a": 6, "c": 1}
    finally:
        stop.set()
        worker.join(60)
    assert not worker.is_alive()
