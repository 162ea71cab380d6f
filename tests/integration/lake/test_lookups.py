"""Dimension lookups on real Spark + Iceberg: a small table is scanned once per snapshot,
always at its current snapshot; a large one is read as before."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.lake.lookups import LookupCache, lookups

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
