"""Metrics observed during an action, waited for with a bound (real Spark)."""

from __future__ import annotations

import pytest
from pyspark.sql import Observation, SparkSession
from pyspark.sql import functions as F

from icetide.lake.observation import observed

pytestmark = pytest.mark.spark


def test_the_metrics_of_an_action_come_back_after_it(spark: SparkSession) -> None:
    seen = Observation()
    df = spark.range(10).observe(seen, F.count(F.lit(1)).alias("n"),
                                 F.count(F.when(F.col("id") % 2 == 0, 1)).alias("even"))
    assert df.collect()[-1][0] == 9
    assert observed(seen, "test figures") == {"n": 10, "even": 5}


def test_an_observation_no_action_ran_is_empty_after_the_wait(spark: SparkSession) -> None:
    """Not a hang: PySpark's own ``Observation.get`` would block for ever here."""
    seen = Observation()
    spark.range(3).observe(seen, F.count(F.lit(1)).alias("n"))  # never run
    assert observed(seen, "test figures", wait=0.5) == {}
