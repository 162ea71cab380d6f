"""Which groups of an aggregation retract by arithmetic (real Spark + Iceberg)."""

from __future__ import annotations

import itertools

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide.engine.group_retraction import row_counts, split_groups
from icetide.flows.context import BatchContext
from icetide.tables.merge_engines import Aggregation

pytestmark = pytest.mark.spark
_n = itertools.count()
ENGINE = Aggregation({"n": "sum", "total": "sum", "last": "max", "label": "last_non_null"})


def _query(clicks: DataFrame) -> DataFrame:
    return clicks.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"),
                                   F.max("v").alias("last"), F.max("label").alias("label"))


def _clicks(spark: SparkSession, rows: list[tuple[str, int, str | None]]) -> DataFrame:
    return spark.createDataFrame(rows, "k string, v bigint, label string")


def test_row_counts_are_found_only_straight_from_the_aggregation(spark: SparkSession) -> None:
    out = _query(_clicks(spark, [("a", 1, None)]))
    assert row_counts(out) == {"n"}
    assert row_counts(out.select("k", F.col("n").alias("rows"))) == {"rows"}
    assert row_counts(out.unionByName(out)) == set()  # a union may bring other rows
    assert row_counts(out.where("n > 1")) == set()  # a filter may drop groups


def test_groups_split_into_arithmetic_emptied_and_recomputed(spark: SparkSession) -> None:
    target = f"lake.grp.t{next(_n)}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.grp")
    stored = [("a", 1, None), ("a", 5, None),  # lose v=1: sums change, max 5 stays
              ("b", 2, None),  # loses its only row: emptied
              ("c", 3, None), ("c", 9, None),  # loses its max: recomputed
              ("d", 4, "x"), ("d", 6, None)]  # loses a label value: recomputed
    _query(_clicks(spark, stored)).writeTo(target).using("iceberg").create()
    removed = _clicks(spark, [("a", 1, None), ("b", 2, None), ("c", 9, None), ("d", 4, "x")])
    ctx = BatchContext(spark=spark, flow="f", catalog="lake", sources={}, batches={})
    out = _query(_clicks(spark, [("b", 7, None)]))  # the batch also adds to b
    split = split_groups(ctx, out, _query(removed), target, ["k"], ENGINE)
    try:
        assert {tuple(r) for r in split.increments.collect()} == {("a", -1, -1, None, None)}
        assert {r.k for r in split.emptied.collect()} == {"b"}
        assert {r.k for r in split.recompute.collect()} == {"c", "d"}
    finally:
        ctx.release()


GROUPED = Aggregation({"n": "sum"}, sequence_groups={"seq": ["label"]})


def _grouped(clicks: DataFrame) -> DataFrame:
    return clicks.groupBy("k").agg(
        F.count(F.lit(1)).alias("n"),
        F.expr("max(v) FILTER (WHERE label IS NOT NULL)").alias("seq"),
        F.expr("max_by(label, v) FILTER (WHERE label IS NOT NULL)").alias("label"))


def test_a_sequence_group_is_recomputed_only_when_its_newest_row_goes(
        spark: SparkSession) -> None:
    target = f"lake.grp.t{next(_n)}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.grp")
    stored = [("a", 1, "old"), ("a", 5, "new"),  # loses an older labelled row: stays
              ("b", 2, "old"), ("b", 6, "new"),  # loses its newest labelled row: recomputed
              ("c", 3, None), ("c", 4, "x")]  # loses an unlabelled row: stays
    _grouped(_clicks(spark, stored)).writeTo(target).using("iceberg").create()
    removed = _clicks(spark, [("a", 1, "old"), ("b", 6, "new"), ("c", 3, None)])
    ctx = BatchContext(spark=spark, flow="f", catalog="lake", sources={}, batches={})
    out = _grouped(_clicks(spark, [("z", 1, "q")]))
    split = split_groups(ctx, out, _grouped(removed), target, ["k"], GROUPED)
    try:
        assert {(r.k, r.n, r.seq, r.label) for r in split.increments.collect()} == {
            ("a", -1, None, None), ("c", -1, None, None)}  # the group left as it is
        assert {r.k for r in split.recompute.collect()} == {"b"}
        assert split.emptied.count() == 0
    finally:
        ctx.release()
