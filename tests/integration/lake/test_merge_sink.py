"""MergeSink: rows + marker in one MERGE commit, changelog appended first, skipped on replay."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.lake import commit
from icetide.lake.sinks import Changes, MergeSink
from icetide.model.markers import Marker
from icetide.tables.changelog import changelog_ddl
from icetide.tables.ddl import PRIMARY_KEY_TABLE_PROPERTIES, create_table_sql
from icetide.tables.merge_engines import Deduplicate, aggregation

pytestmark = pytest.mark.spark

COLS = [("id", "string NOT NULL"), ("level", "int"), ("seq", "bigint")]
TYPES = {"id": "string", "level": "int", "seq": "bigint"}


def _tables(spark: SparkSession, name: str) -> tuple[str, str]:
    target, log = f"lake.sinktest.{name}", f"lake.sinktest.{name}__changelog"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.sinktest")
    spark.sql(create_table_sql(target, COLS, partition_sql=["bucket(4, `id`)"],
                               properties=PRIMARY_KEY_TABLE_PROPERTIES))
    spark.sql(changelog_ddl("lake", f"sinktest.{name}", ["id"], TYPES))
    return target, log


def _batch(spark: SparkSession, rows: list[tuple[str, int | None, int, str]]):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(rows, "id string, level int, seq bigint, _op string")


def test_merge_commits_marker_and_changelog(spark: SparkSession) -> None:
    target, log = _tables(spark, "members")
    sink = MergeSink(Deduplicate("seq"), ["id"], op_column="_op", changelog=log)
    m1 = Marker("cdc", {"s": 0}, {"s": 3}, rows=3).to_summary()
    done = sink.write(spark, _batch(spark, [("a", 1, 1, "+I"), ("b", 2, 2, "+I"),
                                            ("a", 5, 3, "+U")]), target, m1, frozenset())
    assert done == {target: Changes(inserted=2)}
    assert sorted(spark.table(target).collect()) == [("a", 5, 3), ("b", 2, 2)]
    marker = commit.last_marker(spark, target, "cdc")
    assert marker is not None and marker.end == {"s": 3}
    assert commit.last_marker(spark, log, "cdc") == Marker.from_summary({**m1, "icetide.rows": "2"})
    # counted as the append wrote them (an observation), after the marker was set
    logged = dict(commit.load_table(spark, log).currentSnapshot().summary())
    assert "icetide.rows" not in logged and logged["added-records"] == "2"

    m2 = Marker("cdc", {"s": 3}, {"s": 5}).to_summary()
    done = sink.write(spark, _batch(spark, [("a", 7, 4, "+U"), ("b", None, 5, "-D")]), target,
                      m2, frozenset())
    assert done == {target: Changes(updated=1, deleted=1)}
    assert spark.table(target).collect() == [("a", 7, 4)]
    ops = sorted((r["_op"], r["id"]) for r in spark.table(log).collect())
    assert ops == [("+I", "a"), ("+I", "b"), ("+U", "a"), ("-D", "b"), ("-U", "a")]

    # A replay whose changelog append already committed: only the MERGE runs.
    before = spark.table(log).count()
    m3 = Marker("cdc", {"s": 5}, {"s": 6}).to_summary()
    done = sink.write(spark, _batch(spark, [("c", 1, 6, "+I")]), target, m3, frozenset({log}))
    assert done == {target: Changes(inserted=1)}  # counted without the changelog
    assert spark.table(log).count() == before
    assert sorted(spark.table(target).collect()) == [("a", 7, 4), ("c", 1, 6)]
    assert commit.last_marker(spark, target, "cdc").end == {"s": 6}  # type: ignore[union-attr]


def test_empty_batch_commits_marker_only(spark: SparkSession) -> None:
    target, log = _tables(spark, "empty")
    sink = MergeSink(Deduplicate("seq"), ["id"], op_column="_op", changelog=log)
    sink.write(spark, _batch(spark, []), target, Marker("cdc", {}, {"s": 9}).to_summary(),
               frozenset())
    assert spark.table(target).count() == 0
    assert commit.last_marker(spark, target, "cdc").end == {"s": 9}  # type: ignore[union-attr]


def test_batch_that_collapses_to_nothing_commits_marker_only(spark: SparkSession) -> None:
    """Rows that the engine drops (deletes it ignores) leave nothing to MERGE: the sink sees
    that from the key probe's count and commits the marker alone (an empty append)."""
    target, _ = _tables(spark, "ignored")
    spark.sql(f"INSERT INTO {target} VALUES ('a', 1, 1)")
    sink = MergeSink(Deduplicate("seq", on_delete="ignore"), ["id"], op_column="_op")
    done = sink.write(spark, _batch(spark, [("a", None, 2, "-D"), ("b", None, 3, "-D")]),
                      target, Marker("cdc", {}, {"s": 4}).to_summary(), frozenset())
    assert done == {target: Changes()}
    assert spark.table(target).collect() == [("a", 1, 1)]
    current = commit.load_table(spark, target).currentSnapshot()
    assert current.operation() == "append" and "added-data-files" not in dict(current.summary())
    assert commit.last_marker(spark, target, "cdc").end == {"s": 4}  # type: ignore[union-attr]


def test_merge_reports_inserted_updated_deleted(spark: SparkSession) -> None:
    """Without a changelog and with retractions: counted after the commit against the rows
    stored before it (its parent snapshot); an unchanged row and the delete of an absent
    key count nowhere."""
    target, _ = _tables(spark, "counts")
    sink = MergeSink(Deduplicate("seq"), ["id"], op_column="_op")
    rows = [("a", 1, 1, "+I"), ("b", 2, 2, "+I"), ("c", 3, 3, "+I")]
    sink.write(spark, _batch(spark, rows), target, Marker("f", {}, {"s": 1}).to_summary(),
               frozenset())
    batch = [("a", 9, 4, "+U"), ("b", None, 5, "-D"), ("c", 3, 3, "+U"), ("d", 4, 6, "+I"),
             ("e", None, 7, "-D")]
    done = sink.write(spark, _batch(spark, batch), target,
                      Marker("f", {"s": 1}, {"s": 2}).to_summary(), frozenset())
    assert done == {target: Changes(inserted=1, updated=1, deleted=1)}
    assert sorted(spark.table(target).collect()) == [("a", 9, 4), ("c", 3, 3), ("d", 4, 6)]
    summary = dict(commit.load_table(spark, target).currentSnapshot().summary())
    assert summary["added-position-deletes"] == "2"  # the update and the delete
    assert Changes.from_summary(summary) is None  # counted after the commit


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_changes_without_retractions_come_from_the_commit(spark: SparkSession,
                                                          mode: str) -> None:
    """No retraction in the batch and a merge-on-read table: Iceberg's own figures of the
    MERGE commit tell inserts from updates, so no join counts them. A matched row the
    update leaves as it is is not rewritten. A small copy-on-write table is written whole
    (:mod:`icetide.lake.rewrite`): the changes are counted on the write's own pass."""
    target, _ = _tables(spark, f"derived_{mode.replace('-', '_')}")
    spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ('write.merge.mode'='{mode}')")
    sink = MergeSink(aggregation(level="sum", seq="max"), ["id"])
    sink.write(spark, spark.createDataFrame([("a", 1, 1), ("b", 2, 2)], "id string, level int, "
               "seq bigint"), target, Marker("agg", {}, {"s": 1}).to_summary(), frozenset())
    batch = spark.createDataFrame([("a", 3, 0), ("b", 0, 1), ("c", 5, 5)],
                                  "id string, level int, seq bigint")
    done = sink.write(spark, batch, target, Marker("agg", {"s": 1}, {"s": 2}).to_summary(),
                      frozenset())
    assert done == {target: Changes(inserted=1, updated=1)}
    assert sorted(spark.table(target).collect()) == [("a", 4, 1), ("b", 2, 2), ("c", 5, 5)]
    summary = dict(commit.load_table(spark, target).currentSnapshot().summary())
    assert Changes.from_summary(summary) is None  # no icetide counts: nothing ran before
    if mode == "merge-on-read":
        assert (summary["added-records"], summary["added-position-deletes"]) == ("2", "1")
        assert Changes.from_figures(summary) == Changes(inserted=1, updated=1)
    else:
        assert int(summary["deleted-data-files"]) > 0
