"""A batch's row count and newest event time: counted, or observed on another read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame, SparkSession

from icetide.flows import stats
from icetide.flows.stats import Observed, Stats
from icetide.flows.timing import JobCounter

pytestmark = pytest.mark.spark

NEWEST = datetime(2026, 11, 25, 8, 30, 1, 250_000, tzinfo=UTC)


def _batch(spark: SparkSession) -> DataFrame:
    rows = [(i, datetime(2026, 11, 25, 8, 0, tzinfo=UTC)) for i in range(40)]
    rows.append((99, NEWEST))
    return spark.createDataFrame(rows, "k int, ts timestamp").repartition(3)


def test_observed_figures_come_with_the_read_that_needs_the_rows(spark: SparkSession) -> None:
    observed = Observed(_batch(spark), "ts")
    jobs = JobCounter(spark, "observe")
    try:
        keys = observed.df.groupBy("k").count().collect()  # the sink's own read
        figures = observed.get()
        extra_jobs = jobs.count()
    finally:
        jobs.close()
    expected = Stats(41, int(NEWEST.timestamp() * 1000))
    assert len(keys) == 41 and figures == expected == stats.count(_batch(spark), "ts")
    assert extra_jobs == 1  # the read alone (with AQE off for a local master)


def test_figures_nothing_read_are_counted_after_a_bounded_wait(spark: SparkSession) -> None:
    observed = Observed(_batch(spark), None)
    assert observed.get(wait=0.2) == Stats(41, None)


def test_a_count_returns_the_metrics_observed_on_its_way(spark: SparkSession) -> None:
    """Metrics observed on a frame the counted one derives from come with the count;
    names the job did not pass are absent (never a guess)."""
    from pyspark.sql import functions as F

    base = _batch(spark).withColumn("bad", F.when(F.col("k") % 10 == 0, F.lit("reason")))
    seen = base.observe("test_rejected", F.count(F.col("bad")).alias("rows"))
    figures = stats.count(seen.where(F.col("bad").isNull()), "ts",
                          observe=["test_rejected", "test_elsewhere"])
    assert figures.rows == 37 and figures.observed == {"test_rejected": 4}
    assert stats.count(base, "ts", observe=["test_rejected"]).observed == {}


def test_an_observation_completed_without_figures_is_counted(spark: SparkSession) -> None:
    """Spark completes an observation with no metrics at all when the first action over
    the observed frame never runs the observing node — here ``limit 0``, which the
    optimizer turns into an empty relation; on a cluster, adaptive execution dropping a
    stage did it (the cluster e2e test's ``dws.profile_member`` failed 5 batches on a
    ``KeyError``). The figures are then counted."""
    observed = Observed(_batch(spark), "ts")
    assert observed.df.limit(0).collect() == []
    assert observed.get(wait=5.0) == Stats(41, int(NEWEST.timestamp() * 1000))
