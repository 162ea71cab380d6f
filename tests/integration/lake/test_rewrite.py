"""A small copy-on-write table's MERGE written as one overwrite of the whole table."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from icetide.lake import commit, rewrite
from icetide.lake.rewrite import Rewrite, WholeTable
from icetide.lake.sinks import Changes, MergeSink
from icetide.model.markers import Marker
from icetide.tables.changelog import changelog_ddl
from icetide.tables.ddl import PRIMARY_KEY_TABLE_PROPERTIES, create_table_sql
from icetide.tables.merge_engines import Deduplicate
from icetide.tables.merge_sql import MergeSpec
from icetide.tables.sql import quote_qualified

pytestmark = pytest.mark.spark

COLS = [("id", "string NOT NULL"), ("level", "int"), ("seq", "bigint")]
TYPES = {"id": "string", "level": "int", "seq": "bigint"}
ENGINE = Deduplicate("seq")


def _table(spark: SparkSession, name: str, mode: str) -> str:
    """An unpartitioned primary-key table in ``mode`` holding a, b (one file) and c (a
    second file)."""
    target = f"lake.rewritetest.{name}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.rewritetest")
    props = {**PRIMARY_KEY_TABLE_PROPERTIES, "write.merge.mode": mode}
    spark.sql(create_table_sql(target, COLS, properties=props))
    for rows in ([("a", 1, 1), ("b", 2, 2)], [("c", 3, 3)]):
        spark.createDataFrame(rows, "id string, level int, seq bigint").coalesce(1) \
            .writeTo(target).append()
    return target


def _batch(spark: SparkSession, rows: list[tuple[str, int | None, int, str]]) -> DataFrame:
    return spark.createDataFrame(rows, "id string, level int, seq bigint, _op string")


#: an update, a delete, an unchanged row, an insert and the delete of an absent key
BATCH = [("a", 9, 4, "+U"), ("b", None, 5, "-D"), ("c", 3, 3, "+U"), ("d", 4, 6, "+I"),
         ("e", None, 7, "-D")]


def _apply(spark: SparkSession, target: str, rows: list[tuple[str, int | None, int, str]]
           = BATCH) -> tuple[Changes, dict[str, str]]:
    """``rows`` through the MERGE sink; what it reported and its commit's summary."""
    sink = MergeSink(ENGINE, ["id"], op_column="_op")
    done = sink.write(spark, _batch(spark, rows), target,
                      Marker("f", {"s": 0}, {"s": 1}).to_summary(), frozenset())
    return done[target], dict(commit.load_table(spark, target).currentSnapshot().summary())


def test_a_small_copy_on_write_table_is_rewritten_whole_with_the_merge_s_result(
        spark: SparkSession) -> None:
    """The same batch into a merge-on-read table (a MERGE) and a copy-on-write one (one
    overwrite of the whole table): the same rows, the same changes counted (the unchanged
    row and the absent key's delete nowhere), the marker in the overwrite's commit."""
    merged, rewritten = (_table(spark, "mor", "merge-on-read"),
                         _table(spark, "cow", "copy-on-write"))
    expected = [("a", 9, 4), ("c", 3, 3), ("d", 4, 6)]
    by_merge, _ = _apply(spark, merged)
    by_rewrite, summary = _apply(spark, rewritten)
    assert sorted(spark.table(merged).collect()) == expected
    assert sorted(spark.table(rewritten).collect()) == expected
    assert by_merge == by_rewrite == Changes(inserted=1, updated=1, deleted=1)
    assert (summary["deleted-data-files"], summary["added-data-files"]) == ("2", "1")
    assert "added-position-deletes" not in summary and summary["total-records"] == "3"
    assert commit.last_marker(spark, rewritten, "f").end == {"s": 1}  # type: ignore[union-attr]


@pytest.mark.parametrize(("limit", "files_replaced"), [(None, "2"), (2, "1")])
def test_a_copy_on_write_table_above_the_limit_is_merged(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, limit: int | None,
        files_replaced: str) -> None:
    """Within :data:`REWRITE_MAX_ROWS` every file is replaced, c's too; past it (the table
    holds 3 rows) the MERGE runs and rewrites only the file holding the batch's keys (a,
    b). The same rows and changes either way."""
    if limit is not None:
        monkeypatch.setattr(rewrite, "REWRITE_MAX_ROWS", limit)
    target = _table(spark, f"cow_{limit}", "copy-on-write")
    changes, summary = _apply(spark, target, [r for r in BATCH if r[0] != "c"])
    assert changes == Changes(inserted=1, updated=1, deleted=1)
    assert sorted(spark.table(target).collect()) == [("a", 9, 4), ("c", 3, 3), ("d", 4, 6)]
    assert summary["deleted-data-files"] == files_replaced


def test_a_rewrite_of_a_snapshot_another_commit_followed_fails_as_a_conflict(
        spark: SparkSession) -> None:
    """Rows another writer committed after the snapshot a rewrite read are not overwritten
    unseen: the commit fails as an Iceberg conflict (the flow retries the batch)."""
    target = _table(spark, "raced", "copy-on-write")
    read = int(commit.load_table(spark, target).currentSnapshot().snapshotId())
    spark.createDataFrame([("x", 0, 0)], "id string, level int, seq bigint").writeTo(target) \
        .append()
    view = "__rewrite_test_batch"
    spark.createDataFrame([("a", 5, 9)], "id string, level int, seq bigint") \
        .createOrReplaceTempView(view)
    spec = MergeSpec(target=quote_qualified(target), source=view, keys=["id"],
                     columns=list(TYPES))
    job = Rewrite(target, ENGINE, spec, TYPES, view, Marker("f", {}, {"s": 1}).to_summary(),
                  WholeTable(read))
    with pytest.raises(Exception) as raised:
        rewrite.rewrite(spark, job)
    assert commit.is_commit_conflict(raised.value)
    assert sorted(r["id"] for r in spark.table(target).collect()) == ["a", "b", "c", "x"]


def test_a_rewritten_table_s_changelog_is_appended_first_and_counts_the_changes(
        spark: SparkSession) -> None:
    """With a changelog the rewrite replaces only the MERGE: the changelog rows come first
    with the marker, and the overwrite's commit carries their counts."""
    target = _table(spark, "cow_logged", "copy-on-write")
    log = f"{target}__changelog"
    spark.sql(changelog_ddl("lake", "rewritetest.cow_logged", ["id"], TYPES))
    sink = MergeSink(ENGINE, ["id"], op_column="_op", changelog=log)
    done = sink.write(spark, _batch(spark, BATCH), target,
                      Marker("f", {"s": 0}, {"s": 1}).to_summary(), frozenset())
    assert done == {target: Changes(inserted=1, updated=1, deleted=1)}
    assert sorted(spark.table(target).collect()) == [("a", 9, 4), ("c", 3, 3), ("d", 4, 6)]
    ops = sorted((r["_op"], r["id"]) for r in spark.table(log).collect())
    assert ops == [("+I", "d"), ("+U", "a"), ("-D", "b"), ("-U", "a")]
    summary = dict(commit.load_table(spark, target).currentSnapshot().summary())
    assert summary["deleted-data-files"] == "2"  # written whole
    assert Changes.from_summary(summary) == Changes(inserted=1, updated=1, deleted=1)
    assert commit.last_marker(spark, log, "f").end == {"s": 1}  # type: ignore[union-attr]
