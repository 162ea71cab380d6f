"""Retract by position when a batch only removes rows (real Spark + Iceberg)."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import SparkSession
from tests.retractions import copies_table, retraction_batch

from icetide.lake.changes import REMOVED_ROWS, range_changes
from icetide.lake.retract import UnmatchedRetraction
from icetide.lake.retract_positions import (
    StalePositions,
    _check_followed,
    only_retracts,
    retract_by_position,
)
from icetide.model.markers import Marker

pytestmark = pytest.mark.spark


def _last(spark: SparkSession, ident: str) -> tuple[int, str, dict[str, str]]:
    row = spark.sql(f"SELECT snapshot_id, operation, summary FROM {ident}.snapshots "
                    "ORDER BY committed_at DESC LIMIT 1").collect()[0]
    return int(row[0]), str(row[1]), dict(row[2])


def test_only_a_batch_that_removes_rows_and_adds_none_qualifies(spark: SparkSession) -> None:
    assert only_retracts(retraction_batch(spark, [], [("a", 1, None)]))
    assert not only_retracts(retraction_batch(spark, [("d", 4, None)], [("a", 1, None)]))
    assert not only_retracts(retraction_batch(spark, [], []))


def test_deletes_exactly_the_copies_named_in_one_commit_with_the_marker(
        spark: SparkSession) -> None:
    ident = copies_table(spark, "rtp")
    start = _last(spark, ident)[0]
    df = retraction_batch(spark, [], [("a", 1, "changed since"), ("a", 1, None), ("b", 2, "y")])
    marker = Marker("f", {"s": 0}, {"s": 1}).to_summary()
    assert retract_by_position(spark, df, ident, marker) == 3
    assert Counter(tuple(r) for r in spark.table(ident).collect()) == Counter(
        [("a", 1, "old"), ("c", 3, "x")])
    end, operation, summary = _last(spark, ident)
    # one DELETE commit of two positions (no copy deleted and put back), with the marker
    assert operation == "delete" and summary["icetide.flow"] == "f"
    assert summary["added-position-deletes"] == "3" and summary[REMOVED_ROWS]
    changes = range_changes(spark, ident, start, end)
    try:  # the flows below read the removed rows from the file the commit names
        assert Counter(tuple(r) for r in changes.removed().collect()) == Counter(
            [("a", 1, "old"), ("a", 1, "old"), ("b", 2, None)])
    finally:
        changes.close()


def test_a_retraction_that_finds_no_row_stops_the_flow(spark: SparkSession) -> None:
    ident = copies_table(spark, "rtp")
    before = _last(spark, ident)[0]
    with pytest.raises(UnmatchedRetraction, match="1 row"):  # 4 copies named, 3 stored
        retract_by_position(spark, retraction_batch(spark, [], [("a", 1, None)] * 4), ident,
                            Marker("f", {}, {"s": 1}).to_summary())
    with pytest.raises(UnmatchedRetraction, match="1 row"):  # none stored
        retract_by_position(spark, retraction_batch(spark, [], [("z", 9, None)]), ident,
                            Marker("f", {}, {"s": 1}).to_summary())
    assert _last(spark, ident)[0] == before and spark.table(ident).count() == 5


def test_a_commit_that_moved_rows_before_the_delete_stops_the_flow(
        spark: SparkSession) -> None:
    ident = copies_table(spark, "rtp")
    located = _last(spark, ident)[0]
    spark.createDataFrame([("e", 5, None)], "k string, v int, note string"
                          ).writeTo(ident).append()  # an append moves no row: fine
    marker = Marker("f", {"s": 0}, {"s": 1}).to_summary()
    spark.sql(f"DELETE FROM {ident} WHERE k = 'e'")
    ours = {**marker, "icetide.flow": "g"}
    from icetide.lake.commit import append

    append(spark.table(ident).limit(0), ident, ours)
    with pytest.raises(StalePositions, match="delete"):  # the DELETE of 'e' came between
        _check_followed(spark, ident, located, ours)
    located = _last(spark, ident)[0]
    spark.createDataFrame([("f", 6, None)], "k string, v int, note string"
                          ).writeTo(ident).append()
    mine = {**marker, "icetide.flow": "h"}
    append(spark.table(ident).limit(0), ident, mine)
    _check_followed(spark, ident, located, mine)  # only an append between: no error
