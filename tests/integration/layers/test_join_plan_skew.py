"""The DWD join: storage-partitioned join on bucketed tables, and task skew of a hot key.

* SPJ: two tables bucketed ``bucket(16, productId)`` join without any Exchange — for a
  full scan and for an incremental (start/end snapshot) scan of the fact table. A
  *persisted* micro-batch (what the flow loop hands to a transform) cannot be planned
  that way on Spark 3.5.9: hence DWD broadcasts the dimensions.
* Skew: product "1" holds 50 % of the events. Task metrics from Spark's status store
  show one task doing >= half of a shuffle join's work; the broadcast join DWD uses
  leaves the fact rows where they are, so every task joins an even share.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Iterator

import pytest
from pyspark.errors import IllegalArgumentException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide.pipelines import GraphRegistry, registration_context
from tests.tasks import StageTasks, measure_tasks

with registration_context(GraphRegistry(database="dwd")):  # dwd.py declares its table
    enrich = importlib.import_module("examples.clickstream.layers.dwd").enrich

pytestmark = pytest.mark.spark

ROWS = 4000
SPJ_CONF = {
    "spark.sql.sources.v2.bucketing.enabled": "true",
    "spark.sql.sources.v2.bucketing.pushPartValues.enabled": "true",
    "spark.sql.iceberg.planning.preserve-data-grouping": "true",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.enabled": "false",
}


@pytest.fixture()
def conf(spark: SparkSession) -> Iterator[dict[str, str | None]]:
    """Spark SQL confs set by one test (with ``_set``), restored to their prior values after.

    (``unset`` would reset to Spark's default, not to the session's configured value.)
    """
    previous: dict[str, str | None] = {}
    yield previous
    for key, value in previous.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def _set(spark: SparkSession, conf: dict[str, str | None], values: dict[str, str]) -> None:
    for key, value in values.items():
        conf.setdefault(key, spark.conf.get(key, None))
        spark.conf.set(key, value)


def _clicks(spark: SparkSession) -> DataFrame:
    hot = F.col("id") % 2 == 0
    return spark.range(ROWS, numPartitions=4).select(
        F.when(hot, F.lit("1")).otherwise((F.col("id") % 8 + 2).cast("string")).alias("productId"),
        (F.col("id") % 6).cast("string").alias("uid"),
        F.col("id").alias("updateTime"),
    )


def _tables(spark: SparkSession, bucketed_fact: bool = True) -> tuple[str, str]:
    """``fact`` (bucketed, or unpartitioned like ODS's day partitions) and ``dim`` (bucketed)."""
    db = f"lake.spj_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {db}")
    bucketed = "PARTITIONED BY (bucket(16, productId))"
    for name, cols, parts in (
            ("fact", "productId string, uid string, updateTime bigint",
             bucketed if bucketed_fact else ""),
            ("dim", "productId string, name string", bucketed)):
        spark.sql(f"CREATE TABLE {db}.{name} ({cols}) USING iceberg {parts}")
    spark.createDataFrame([(str(p), f"p{p}") for p in range(1, 10)],
                          "productId string, name string").writeTo(f"{db}.dim").append()
    return f"{db}.fact", f"{db}.dim"


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def test_storage_partitioned_join_plan(spark: SparkSession, conf: dict[str, str | None]) -> None:
    _set(spark, conf, SPJ_CONF)
    fact, dim = _tables(spark)
    _clicks(spark).writeTo(fact).append()
    first = spark.sql(f"SELECT snapshot_id FROM {fact}.snapshots").collect()[0][0]
    _clicks(spark).writeTo(fact).append()
    last = spark.sql(f"SELECT max_by(snapshot_id, committed_at) FROM {fact}.snapshots"
                     ).collect()[0][0]

    full = spark.table(fact).join(spark.table(dim), "productId")
    batch = (spark.read.format("iceberg").option("start-snapshot-id", first)
             .option("end-snapshot-id", last).load(fact)).join(spark.table(dim), "productId")
    for joined in (full, batch):
        plan = _plan(joined)
        assert "SortMergeJoin" in plan and "Exchange" not in plan, plan
    assert batch.count() == ROWS and full.count() == 2 * ROWS

    # The flow loop persists each micro-batch. Spark 3.5.9 cannot plan a persisted,
    # key-grouped scan joined to a bucketed table with SPJ on (EnsureRequirements builds
    # an invalid PartitioningCollection): SPJ is not usable on the micro-batch.
    persisted = spark.table(fact).persist()
    try:
        with pytest.raises(IllegalArgumentException, match="PartitioningCollection"):
            _plan(persisted.join(spark.table(dim), "productId"))
    finally:
        persisted.unpersist()


def _join_stage(spark: SparkSession, joined: DataFrame, label: str) -> StageTasks:
    with measure_tasks(spark, label) as sample:
        joined.count()
    return sample.busiest_stage()


def test_hot_key_task_skew(spark: SparkSession, conf: dict[str, str | None]) -> None:
    _set(spark, conf, {"spark.sql.autoBroadcastJoinThreshold": "-1",
                       "spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "8"})
    fact, dim = _tables(spark, bucketed_fact=False)
    _clicks(spark).repartition(4).writeTo(fact).append()
    # one split per data file (4), as a larger batch would have
    facts = (spark.read.format("iceberg").option("split-size", "1024")
             .option("file-open-cost", "1024").load(fact))
    dims = spark.table(dim)

    shuffled = _join_stage(spark, facts.join(dims, "productId"), "smj")
    assert shuffled.total_records >= ROWS and len(shuffled.records) == 8
    assert max(shuffled.records) >= ROWS // 2  # the hot key's task did half of the join

    members = spark.createDataFrame([(str(u), 1) for u in range(6)],
                                    "userid string, memberLevel int")
    clicks = facts.select("productId", "uid", "updateTime", F.lit(1).alias("webpageId"),
                          F.lit("c").alias("cookieId"), F.lit(3).alias("expendTime"),
                          F.timestamp_millis("updateTime").alias("eventTime"),
                          F.lit("20260101").alias("dt"))
    dims_priced = dims.withColumn("product_price", F.lit(1.5))
    broadcast = _join_stage(spark, enrich(clicks, dims_priced, members), "broadcast")
    assert broadcast.total_records == ROWS and broadcast.max_share <= 0.3
    print(f"max task share: shuffle {shuffled.max_share:.2f} ({len(shuffled.records)} tasks), "
          f"broadcast {broadcast.max_share:.2f} ({len(broadcast.records)} tasks)")
