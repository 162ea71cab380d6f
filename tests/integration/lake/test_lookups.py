"""Dimension lookups on real Spark + Iceberg: a small table is scanned once per snapshot,
always at its current snapshot; a large one is read as before, and joined by
``dp.lookup_join`` without a broadcast, from partitions cached once per snapshot."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.lake.lookups import LookupCache, lookups
from icetide.pipelines.lookup import LookupSpec

pytestmark = pytest.mark.spark


def _dim(spark: SparkSession, name: str) -> str:
    ident = f"lake.lk.{name}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.lk")
    spark.sql(f"CREATE TABLE {ident} (id int, name string) USING iceberg")
    spark.sql(f"INSERT INTO {ident} VALUES (1, 'a'), (2, 'b')")
    return ident


def _rows(df: object) -> list[tuple[int, str]]:
    return sorted((r[0], r[1]) for r in df.collect())  # type: ignore[attr-defined]


def test_a_small_table_is_scanned_once_per_snapshot(spark: SparkSession) -> None:
    ident = _dim(spark, "products")
    cache = LookupCache(spark)
    first = cache.read(ident)
    assert _rows(first) == [(1, "a"), (2, "b")]
    assert first.storageLevel.useMemory  # kept in Spark's cache
    assert cache.read(ident) is first  # unchanged snapshot: the same cached rows

    spark.sql(f"UPDATE {ident} SET name = 'B' WHERE id = 2")
    spark.sql(f"INSERT INTO {ident} VALUES (3, 'c')")
    second = cache.read(ident)
    assert second is not first
    assert _rows(second) == [(1, "a"), (2, "B"), (3, "c")]  # the current snapshot
    assert not first.storageLevel.useMemory  # the old snapshot's rows were released
    cache.clear()
    assert not second.storageLevel.useMemory


def test_a_large_table_and_a_new_column_are_read_as_they_are(spark: SparkSession) -> None:
    ident = _dim(spark, "members")
    small_only = LookupCache(spark, max_bytes=1)
    big = small_only.read(ident)
    assert not big.storageLevel.useMemory and _rows(big) == [(1, "a"), (2, "b")]

    cache = LookupCache(spark)
    assert cache.read(ident).storageLevel.useMemory
    spark.sql(f"ALTER TABLE {ident} ADD COLUMN level int")  # no snapshot yet has it
    evolved = cache.read(ident)
    assert evolved.columns == ["id", "name", "level"]
    assert not evolved.storageLevel.useMemory
    cache.clear()


def test_one_cache_per_session(spark: SparkSession) -> None:
    assert lookups(spark) is lookups(spark)


def _plan(df: object) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())  # type: ignore[attr-defined]


def test_a_small_dimension_is_joined_as_a_broadcast(spark: SparkSession) -> None:
    ident = _dim(spark, "shops")
    clicks = spark.createDataFrame([(1, "x"), (3, "y")], "id int, ev string")
    out = LookupCache(spark).join(clicks, ident, LookupSpec(("id",)))
    assert sorted(map(tuple, out.collect())) == [(1, "x", "a"), (3, "y", None)]
    assert "BroadcastHashJoin" in _plan(out)
    inner = LookupCache(spark).join(clicks, ident, LookupSpec(("id",), how="inner"))
    assert [tuple(r) for r in inner.collect()] == [(1, "x", "a")]


def test_a_large_dimension_is_joined_without_a_broadcast(spark: SparkSession) -> None:
    ident = "lake.lk.items"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.lk")
    spark.sql(f"CREATE TABLE {ident} (id string, name string, price double) USING iceberg "
              "PARTITIONED BY (bucket(4, id))")
    spark.sql(f"INSERT INTO {ident} SELECT CAST(id AS string), concat('item-', id), id / 10 "
              "FROM range(5000)")
    cache = LookupCache(spark, max_bytes=1)  # every table is "large"
    spec = LookupSpec(("id",), ("name",))
    # one hot key takes 30 % of the clicks, the rest spread, one unknown key
    clicks = spark.sql("SELECT CASE WHEN id % 10 < 3 THEN '7' WHEN id = 5 THEN 'none' "
                       "ELSE CAST(id * 7 % 5000 AS string) END AS id, id AS ev FROM range(2000)")
    out = cache.join(clicks, ident, spec)
    want = clicks.join(spark.table(ident).select("id", "name"), "id", "left")
    assert sorted(map(tuple, out.collect())) == sorted(map(tuple, want.collect()))
    assert out.where("id = '7'").count() == 600
    assert out.where("id = 'none'").first()["name"] is None  # type: ignore[index]
    plan = _plan(out)
    assert "Broadcast" not in plan and "SortMergeJoin" in plan
    # the batch is shuffled and sorted to meet the cached dimension's partitions; the
    # dimension (below InMemoryRelation: how it was cached) is neither, per batch
    per_batch = plan.split("InMemoryRelation")[0]
    assert per_batch.count("Exchange hashpartitioning") == 1
    assert per_batch.count(" Sort [") == 1 and "InMemoryTableScan" in per_batch
    assert cache.join(clicks, ident, spec) is not out  # new frame, same cached dimension
    held = cache._parted[(ident, spec)].df
    assert held.storageLevel.useMemory

    spark.sql(f"UPDATE {ident} SET name = 'renamed' WHERE id = '7'")
    again = cache.join(clicks, ident, spec)
    assert {r["name"] for r in again.where("id = '7'").collect()} == {"renamed"}
    assert not held.storageLevel.useMemory  # the old snapshot's partitions were released
    cache.clear()
    assert not cache._parted


def test_lookup_join_without_a_run_joins_what_dp_read_gives(spark: SparkSession) -> None:
    from icetide.errors import PipelineError
    from icetide.pipelines import lookup_join, set_reader

    ident = _dim(spark, "regions")
    clicks = spark.createDataFrame([(2, "x")], "id int, ev string")
    previous = set_reader(lambda name, streaming: spark.table(f"lake.{name}"))
    try:
        out = lookup_join(clicks, "lk.regions", on="id", columns=["name"])
        assert [tuple(r) for r in out.collect()] == [(2, "x", "b")]
        with pytest.raises(PipelineError, match="no column level"):
            lookup_join(clicks, "lk.regions", on="id", columns=["level"])
    finally:
        set_reader(previous)
    assert ident
