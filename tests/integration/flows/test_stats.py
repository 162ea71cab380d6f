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
