"""What a range of snapshots added and removed, on real Spark + Iceberg, whoever wrote it.

Every kind of commit a user or another engine makes to an append table: merge-on-read
and copy-on-write DELETE and UPDATE, INSERT OVERWRITE, compaction (no change), a
rollback (refused), all read through the upstream-table source a flow uses.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from icetide.app.lag import LagProbes
from icetide.config import Settings
from icetide.lake.changes import ChangeNotReadable
from icetide.lake.commit import load_table
from icetide.runtime.catalogs import pyiceberg_catalog
from icetide.sources.iceberg import IcebergTableSource

pytestmark = pytest.mark.spark

_n = itertools.count()
MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
COW = ("'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
       "'write.merge.mode'='copy-on-write'")


@pytest.fixture()
def table(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[str]:
    ident = f"lake.chg.t{next(_n)}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.chg")
    props = request.param if "format-version" in request.param else (
        f"'format-version'='2', {request.param}")
    spark.sql(f"CREATE TABLE {ident} (id bigint, uid string, v int) USING iceberg "
              f"PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ({props})")
    for i in range(3):  # three appends, 12 data files
        spark.range(i * 100, (i + 1) * 100).selectExpr(
            "id", "cast(id % 10 as string) uid", "cast(id as int) v").writeTo(ident).append()
    yield ident
    spark.sql(f"DROP TABLE {ident}")


def current(spark: SparkSession, ident: str) -> int:
    return int(load_table(spark, ident).currentSnapshot().snapshotId())


def changes(spark: SparkSession, ident: str, start: int) -> tuple[Counter[tuple[object, ...]],
                                                                   Counter[tuple[object, ...]]]:
    source = IcebergTableSource(spark, ident)
    batch = source.plan({"snapshot": start})
    assert batch is not None
    try:
        added = Counter(tuple(r) for r in source.read(spark, batch).collect())
        removed_df = source.removed(spark, batch)
        removed = Counter(tuple(r) for r in removed_df.collect()) if removed_df else Counter()
    finally:
        source.release(batch)
    return added, removed


V3 = MOR + ", 'format-version'='3'"  # deletion vectors


@pytest.mark.parametrize("table", [MOR, COW, V3], indirect=True, ids=["mor", "cow", "v3"])
def test_delete_and_update_read_as_removed_and_added(spark: SparkSession, table: str) -> None:
    start = current(spark, table)
    spark.sql(f"DELETE FROM {table} WHERE uid = '3'")
    spark.sql(f"UPDATE {table} SET v = -1 WHERE id = 201")
    added, removed = changes(spark, table, start)
    assert removed == Counter([(i, "3", i) for i in range(3, 300, 10)] + [(201, "1", 201)])
    assert added == Counter([(201, "1", -1)])  # a rewrite's unchanged rows are netted out


@pytest.mark.parametrize("table", [MOR], indirect=True)
def test_overwrite_and_compaction(spark: SparkSession, table: str) -> None:
    start = current(spark, table)
    spark.sql(f"CALL lake.system.rewrite_data_files(table => '{table.split('.', 1)[1]}', "
              "options => map('rewrite-all', 'true'))")
    source = IcebergTableSource(spark, table)
    assert source.plan({"snapshot": start}).records == 0  # type: ignore[union-attr]
    spark.sql(f"INSERT OVERWRITE {table} SELECT id, uid, v + 1 FROM {table} WHERE id < 5")
    added, removed = changes(spark, table, start)
    assert sum(removed.values()) == 300 and sum(added.values()) == 5
    assert added == Counter([(i, str(i), i + 1) for i in range(5)])


@pytest.mark.parametrize("table", [MOR], indirect=True)
def test_rollback_stops_the_reader_with_the_fix(spark: SparkSession, table: str) -> None:
    first = int(spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at"
                          ).collect()[0][0])
    read_up_to = current(spark, table)
    spark.sql(f"CALL lake.system.rollback_to_snapshot('{table.split('.', 1)[1]}', {first})")
    with pytest.raises(ChangeNotReadable) as err:
        IcebergTableSource(spark, table).plan({"snapshot": read_up_to})
    text = str(err.value)
    assert f"not a descendant of snapshot {read_up_to}" in text and "rollback" in text
    assert "icetide table refresh" in text


@pytest.mark.parametrize("table", [MOR], indirect=True)
def test_lag_counts_removed_rows(spark: SparkSession, icetide_settings: Settings,
                                 table: str) -> None:
    """A consumer behind a delete is not caught up: status counts the rows it removed."""
    start = current(spark, table)
    spark.sql(f"DELETE FROM {table} WHERE uid = '3'")
    assert IcebergTableSource(spark, table).lag({"snapshot": start}) == {
        "snapshots": 1, "rows": 30, "removes": True}
    probes = LagProbes(icetide_settings, pyiceberg_catalog(icetide_settings))
    lag = probes(f"iceberg:{table}", {"snapshot": start})
    assert lag is not None and lag.behind == 30 and lag.detail["removes"] is True


@pytest.mark.parametrize("table", [MOR], indirect=True, ids=["mor"])
def test_a_capped_range_says_more_is_waiting(spark: SparkSession, table: str) -> None:
    first = int(load_table(spark, table).snapshots().iterator().next().snapshotId())
    source = IcebergTableSource(spark, table)
    capped = source.plan({"snapshot": first}, max_records=150)  # one of the two appends
    assert capped is not None and capped.records == 100 and capped.info["caught_up"] is False
    whole = source.plan({"snapshot": first}, max_records=200)
    assert whole is not None and whole.records == 200 and whole.info["caught_up"] is True


@pytest.mark.parametrize("table", [MOR], indirect=True)
def test_removed_rows_are_read_by_every_core(spark: SparkSession, table: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Iceberg packs a staged read into 128 MiB tasks: an erase touching every file of a
    table was read by one task. The split follows the cores (here: files of a few KiB,
    so the least split is lowered to show it)."""
    from icetide.lake import changes as changes_module

    monkeypatch.setattr(changes_module, "MIN_SPLIT_BYTES", 1)
    slots = spark.sparkContext.defaultParallelism
    assert slots >= 2
    start = current(spark, table)
    spark.sql(f"DELETE FROM {table} WHERE uid = '3'")  # a row in each of the 12 files
    found = changes_module.range_changes(spark, table, start, current(spark, table))
    try:
        removed = found.removed_raw()
        assert removed.rdd.getNumPartitions() >= slots
        assert removed.count() == 30
    finally:
        found.close()
