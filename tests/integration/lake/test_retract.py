"""Retract and append in one MERGE on an append table (real Spark + Iceberg)."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from tests.retractions import copies_table, retraction_batch

from icetide.lake.retract import UnmatchedRetraction, append_with_retractions
from icetide.model.markers import Marker

pytestmark = pytest.mark.spark


def test_retracts_as_many_copies_as_named_and_appends_in_one_commit(spark: SparkSession) -> None:
    ident = copies_table(spark, "rtr")
    before = spark.sql(f"SELECT count(*) FROM {ident}.snapshots").collect()[0][0]
    # two retractions of (a, 1) — matched on k, v only (note: a lookup value, may differ)
    df = retraction_batch(spark, [("d", 4, "new")], [("a", 1, "changed since"), ("a", 1, None),
                                          ("b", 2, "y")])
    marker = Marker("f", {"s": 0}, {"s": 1})
    assert append_with_retractions(spark, df, ident, marker.to_summary()) == 3
    rows = Counter(tuple(r) for r in spark.table(ident).collect())
    assert rows == Counter([("a", 1, "old"), ("c", 3, "x"), ("d", 4, "new")])
    snaps = spark.sql(f"SELECT summary['icetide.flow'] FROM {ident}.snapshots "
                      "ORDER BY committed_at").collect()
    assert len(snaps) == before + 1 and snaps[-1][0] == "f"  # one commit, with the marker


def test_a_retraction_that_finds_no_row_stops_the_flow(spark: SparkSession) -> None:
    ident = copies_table(spark, "rtr")
    df = retraction_batch(spark, [], [("z", 9, None)]).withColumn("note", F.col("note"))
    with pytest.raises(UnmatchedRetraction, match="1 row"):
        append_with_retractions(spark, df, ident, Marker("f", {}, {}).to_summary())
    assert spark.table(ident).count() == 5  # nothing committed


def _removed(spark: SparkSession, ident: str, start: int, end: int) -> Counter[tuple[object, ...]]:
    from icetide.lake.changes import range_changes

    changes = range_changes(spark, ident, start, end)
    try:
        return Counter(tuple(r) for r in changes.removed().collect())
    finally:
        changes.close()


def test_the_commit_names_the_rows_it_removed_and_readers_survive_losing_them(
        spark: SparkSession) -> None:
    import shutil
    from urllib.parse import urlparse

    from icetide.lake.changes import REMOVED_ROWS

    ident = copies_table(spark, "rtr")
    start = spark.sql(f"SELECT snapshot_id FROM {ident}.snapshots ORDER BY committed_at DESC "
                      "LIMIT 1").collect()[0][0]
    df = retraction_batch(spark, [("d", 4, "new")], [("a", 1, None), ("b", 2, None)])
    append_with_retractions(spark, df, ident, Marker("f", {"s": 0}, {"s": 1}).to_summary())
    spark.createDataFrame([("e", 5, "later")], "k string, v int, note string"
                          ).writeTo(ident).append()  # an append after it: still read so
    end, path = spark.sql(f"SELECT snapshot_id, summary['{REMOVED_ROWS}'] FROM "
                          f"{ident}.snapshots ORDER BY committed_at").collect()[-2]
    last = spark.sql(f"SELECT max_by(snapshot_id, committed_at) FROM {ident}.snapshots"
                     ).collect()[0][0]
    # the MERGE deletes every stored copy of (a, 1, old) and re-inserts the two kept
    expected = Counter([("a", 1, "old")] * 3 + [("b", 2, None)])
    from icetide.lake.changes import _first_removal_file
    from icetide.lake.commit import load_table

    assert _first_removal_file(load_table(spark, ident), start, last) == path  # read from it
    assert path and _removed(spark, ident, start, last) == expected
    shutil.rmtree(urlparse(path).path)  # e.g. orphan-file removal took it
    assert _removed(spark, ident, start, last) == expected
    assert end != last
