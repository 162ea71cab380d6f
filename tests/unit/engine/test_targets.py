"""Partitioning of a flow's target table (pure: no Spark)."""

from __future__ import annotations

from icetide.engine.targets import DEFAULT_BUCKETS, partition_sql
from icetide.pipelines.spec import PartitionField, TableSpec


def test_a_primary_key_table_is_bucketed_by_its_first_key_unless_it_declares_otherwise(
) -> None:
    default = TableSpec("db.t", primary_key=("id", "k"))
    declared = TableSpec("db.t", primary_key=("id",),
                         partition_cols=(PartitionField("bucket", "k", 4),))
    unpartitioned = TableSpec("db.t", primary_key=("id",), unpartitioned=True)
    assert partition_sql(default) == [f"bucket({DEFAULT_BUCKETS}, `id`)"]
    assert partition_sql(declared) == ["bucket(4, `k`)"]
    assert partition_sql(unpartitioned) == []


def test_an_append_table_is_partitioned_only_as_declared() -> None:
    assert partition_sql(TableSpec("db.t")) == []
    assert partition_sql(TableSpec("db.t", partition_cols=(PartitionField("days", "ts"),))) == [
        "days(`ts`)"]
