"""The FAIR pools of a real session: a flow batch's tasks get the cores before maintenance's."""

from __future__ import annotations

import threading
import time

import pytest
from pyspark.sql import SparkSession

from icetide.runtime.pools import FLOWS_POOL, MAINTENANCE_POOL

pytestmark = pytest.mark.spark

Task = tuple[str, float, float]


def _job(spark: SparkSession, pool: str, tasks: int, seconds: float) -> list[Task]:
    """``tasks`` tasks of ``seconds`` each in ``pool``: (pool, start, end) per task."""
    def one(_: int) -> Task:
        began = time.time()
        time.sleep(seconds)
        return pool, began, time.time()

    spark.sparkContext.setLocalProperty("spark.scheduler.pool", pool)
    try:
        return spark.sparkContext.parallelize(range(tasks), tasks).map(one).collect()
    finally:
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", None)  # type: ignore[arg-type]


def test_flow_tasks_take_each_free_core_before_maintenance(spark: SparkSession) -> None:
    upkeep: list[Task] = []
    compaction = threading.Thread(
        target=lambda: upkeep.extend(_job(spark, MAINTENANCE_POOL, 40, 0.3)))
    compaction.start()
    try:
        deadline = time.monotonic() + 60
        while not spark.sparkContext.statusTracker().getActiveStageIds():
            assert time.monotonic() < deadline, "the maintenance job never started"
            time.sleep(0.05)
        time.sleep(0.5)  # both cores busy with maintenance tasks
        flow = _job(spark, FLOWS_POOL, 8, 0.3)
    finally:
        compaction.join()
    first, last = min(t[1] for t in flow), max(t[1] for t in flow)
    cut_in = [t for t in upkeep if first < t[1] < last]
    # Equal pools would have split the cores: about half of the starts in that window
    # would be maintenance tasks. With the pools, every core a task frees goes to the flow.
    assert cut_in == [], f"{len(cut_in)} maintenance tasks started while the flow waited"
    assert len(upkeep) == 40 and any(t[1] > last for t in upkeep)
