"""Continuous mode with two flows into one aggregation table (as dws.product_views has).

Each flow runs in its own thread: the ``dp.read`` hook must stay installed while any of
them runs a query, and their MERGEs must not collide (one would fail Iceberg's conflict
check and wait for a retry). The final sums must be exact and no batch may fail.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.run import PipelineRun
from icetide.lake.sinks import SerializedSink
from icetide.pipelines import load_pipeline

pytestmark = pytest.mark.spark

PIPELINE = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp

dp.create_streaming_table("{db}.totals", primary_key=["k"],
                          merge_engine=dp.aggregation(a="sum", b="sum"))

@dp.append_flow(target="{db}.totals")
def sum_a():
    rows = dp.read_stream("{db}.events").join(dp.read("{db}.keys"), "k")
    return rows.groupBy("k").agg(F.sum("v").alias("a"), F.lit(0).cast("bigint").alias("b"))

@dp.append_flow(target="{db}.totals")
def count_b():
    rows = dp.read_stream("{db}.events").join(dp.read("{db}.keys"), "k")
    return rows.groupBy("k").agg(F.lit(0).cast("bigint").alias("a"), F.count("v").alias("b"))
'''


def _add(spark: SparkSession, db: str, rows: list[tuple[str, int]]) -> None:
    spark.createDataFrame(rows, "k string, v bigint").writeTo(f"lake.{db}.events").append()


def _totals(spark: SparkSession, db: str) -> dict[str, tuple[int, int]]:
    return {r[0]: (r[1], r[2]) for r in spark.table(f"lake.{db}.totals").collect()}


def test_two_flows_one_target_continuously(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    db = f"shared_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{db}")
    spark.sql(f"CREATE TABLE lake.{db}.events (k string, v bigint) USING iceberg")
    spark.createDataFrame([("x",), ("y",)], "k string").writeTo(f"lake.{db}.keys").create()
    (tmp_path / "icetide-pipeline.yml").write_text(f"name: sh\ncatalog: lake\ndatabase: {db}\n")
    (tmp_path / "flows.py").write_text(PIPELINE.replace("{db}", db))
    _add(spark, db, [("x", 1), ("y", 2)])
    run = PipelineRun(spark, icetide_settings, load_pipeline(tmp_path), trigger_interval=0.2)
    assert all(isinstance(f.sink, SerializedSink) for f in run.compile_all())
    stop = threading.Event()
    worker = threading.Thread(target=run.run_forever, args=(stop,), daemon=True)
    caplog.set_level(logging.ERROR, logger="icetide.flows.loop")
    worker.start()
    try:
        for i in range(4):
            _add(spark, db, [("x", 10 + i), ("y", 1)])
            time.sleep(0.5)
        expected = {"x": (1 + 10 + 11 + 12 + 13, 5), "y": (2 + 4, 5)}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and _totals(spark, db) != expected:
            time.sleep(0.5)
    finally:
        stop.set()
        worker.join(120)
    assert _totals(spark, db) == expected
    assert not worker.is_alive()
    assert not [r for r in caplog.records if "batch failed" in r.getMessage()]
