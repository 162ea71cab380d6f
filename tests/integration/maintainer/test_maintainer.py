"""Maintainer on real Spark + Iceberg: compaction, consumer-aware expiry, deletes, orphans."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from icetide.config import MaintenanceConfig, Settings
from icetide.errors import PositionLostError
from icetide.lake import commit
from icetide.maintainer import Maintainer
from icetide.model.markers import Marker
from icetide.sources.iceberg import IcebergTableSource
from icetide.tables.ddl import PRIMARY_KEY_TABLE_PROPERTIES, create_table_sql

pytestmark = pytest.mark.spark

EAGER = MaintenanceConfig(snapshot_retention=0, retain_last=1, min_input_files=2,
                          orphan_interval=1)


def _events(spark: SparkSession, name: str, batches: int) -> tuple[str, list[int]]:
    """An append table written by flow ``up`` in ``batches`` commits of 10 rows."""
    ident = f"lake.mt.{name}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.mt")
    spark.sql(f"CREATE TABLE {ident} (id bigint, v string) USING iceberg")
    snaps = []
    for b in range(batches):
        rows = spark.range(b * 10, b * 10 + 10).selectExpr("id", "cast(id as string) v")
        commit.append(rows.coalesce(1), ident,
                      Marker("up", {"k": b}, {"k": b + 1}, rows=10).to_summary())
        snaps.append(int(commit.load_table(spark, ident).currentSnapshot().snapshotId()))
    return ident, snaps


def _consumer(spark: SparkSession, name: str, source: str, snapshot: int) -> str:
    """A downstream table whose flow ``down`` committed ``source`` up to ``snapshot``."""
    ident = f"lake.mt.{name}"
    spark.sql(f"CREATE TABLE {ident} (id bigint) USING iceberg")
    pos = {f"iceberg:{source}": {"snapshot": snapshot}}
    commit.commit_marker_only(spark, ident, Marker("down", {}, pos).to_summary())
    return ident


def _settings(base: Settings, policy: MaintenanceConfig) -> Settings:
    return base.model_copy(update={"maintenance": policy})


def test_compaction_and_expiry_keep_what_consumers_need(
        spark: SparkSession, icetide_settings: Settings) -> None:
    source, snaps = _events(spark, "clicks", 8)
    _consumer(spark, "clicks_down", source, snaps[2])
    report = Maintainer(spark, _settings(icetide_settings, EAGER)).run("mt.clicks")

    assert report.before.data_files == 8 and report.after is not None
    assert report.after.data_files == 1, report
    assert spark.table(source).count() == 80
    table = commit.load_table(spark, source)
    kept = {int(s.snapshotId()) for s in table.snapshots()}
    assert set(snaps[2:]) <= kept and not set(snaps[:2]) & kept
    assert report.actions.expiry.snapshots == 2
    marker = commit.last_marker(spark, source, "up")
    assert marker is not None and marker.end == {"k": 8}
    # the consumer resumes where it stopped: exactly the rows of batches 4..8
    src = IcebergTableSource(spark, source)
    batch = src.plan({"snapshot": snaps[2]})
    assert batch is not None and src.read(spark, batch).count() == 50


def test_consumer_beyond_max_lag_stops_with_remedy(
        spark: SparkSession, icetide_settings: Settings) -> None:
    source, snaps = _events(spark, "late", 4)
    _consumer(spark, "late_down", source, snaps[0])
    time.sleep(0.05)
    policy = EAGER.model_copy(update={"max_consumer_lag": 0.01})
    Maintainer(spark, _settings(icetide_settings, policy)).run("mt.late")
    with pytest.raises(PositionLostError, match="icetide table refresh"):
        IcebergTableSource(spark, source).plan({"snapshot": snaps[0]})


def test_dry_run_changes_nothing(spark: SparkSession, icetide_settings: Settings) -> None:
    source, _ = _events(spark, "dry", 4)
    before = int(commit.load_table(spark, source).currentSnapshot().snapshotId())
    report = Maintainer(spark, _settings(icetide_settings, EAGER), dry_run=True).run("mt.dry")
    assert report.actions.compaction.files_before == 4
    assert report.actions.expiry.snapshots == 3
    table = commit.load_table(spark, source)
    assert int(table.currentSnapshot().snapshotId()) == before
    assert sum(1 for _ in table.snapshots()) == 4


def test_deletes_are_applied_on_a_primary_key_table(
        spark: SparkSession, icetide_settings: Settings) -> None:
    ident = "lake.mt.members"
    spark.sql(create_table_sql(ident, [("id", "bigint NOT NULL"), ("v", "bigint")],
                               partition_sql=["bucket(4, `id`)"],
                               properties=PRIMARY_KEY_TABLE_PROPERTIES))
    spark.range(0, 100).selectExpr("id", "0L v").writeTo(ident).append()
    for i in range(1, 4):
        spark.range(0, 100, 3 + i).selectExpr("id", f"{i}L v").createOrReplaceTempView("u")
        spark.sql(f"MERGE INTO {ident} t USING u ON t.id = u.id "
                  "WHEN MATCHED THEN UPDATE SET v = u.v")
    expected = sorted(spark.table(ident).collect())
    report = Maintainer(spark, _settings(icetide_settings, EAGER)).run("mt.members")
    assert report.before.delete_files > 0 and report.after is not None
    assert report.after.delete_files == 0, report
    assert sorted(spark.table(ident).collect()) == expected


def _few_deletes(spark: SparkSession, ident: str) -> list[Row]:
    """A 4-bucket primary-key table with 15 of 2,015 rows deleted by 3 MERGEs: Spark
    keeps one delete file per data file (file granularity), so 4 delete files."""
    spark.sql(create_table_sql(ident, [("id", "bigint NOT NULL"), ("v", "bigint")],
                               partition_sql=["bucket(4, `id`)"],
                               properties=PRIMARY_KEY_TABLE_PROPERTIES))
    spark.range(0, 2000).selectExpr("id", "0L v").writeTo(ident).append()
    for i in range(1, 4):
        spark.range(i, 2000, 400).selectExpr("id", f"{i}L v").createOrReplaceTempView("u")
        spark.sql(f"MERGE INTO {ident} t USING u ON t.id = u.id "
                  "WHEN MATCHED THEN UPDATE SET v = u.v")
    return sorted(spark.table(ident).collect())


def test_delete_files_of_a_small_table_are_rewritten_in_one_commit(
        spark: SparkSession, icetide_settings: Settings) -> None:
    """Its 4 buckets' delete files are one file group each: rewritten together, one commit."""
    expected = _few_deletes(spark, "lake.mt.few_deletes")
    policy = EAGER.model_copy(update={"min_input_files": 100, "retain_last": 100})
    report = Maintainer(spark, _settings(icetide_settings, policy)).run("mt.few_deletes")
    assert report.actions.compaction is None and report.before.delete_files == 4
    assert report.actions.deletes.done.rewritten_delete_files_count == 4, report
    table = commit.load_table(spark, "lake.mt.few_deletes")
    assert sum(1 for s in table.snapshots() if s.operation() == "replace") == 1
    assert sorted(spark.table("lake.mt.few_deletes").collect()) == expected


def test_orphans_go_only_after_the_safety_age(
        spark: SparkSession, icetide_settings: Settings) -> None:
    source, _ = _events(spark, "orph", 2)
    data = Path(str(commit.load_table(spark, source).location()).removeprefix("file:")) / "data"
    old, fresh = data / "old-leftover.parquet", data / "fresh-leftover.parquet"
    old.write_bytes(b"x" * 100)
    fresh.write_bytes(b"y" * 100)
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    report = Maintainer(spark, _settings(icetide_settings, EAGER)).run("mt.orph")
    assert report.actions.orphans.orphan_files == 1
    assert not old.exists() and fresh.exists()
    assert spark.table(source).count() == 20


def _sizes(spark: SparkSession, ident: str) -> list[int]:
    return sorted(int(r[0]) for r in spark.sql(
        f"SELECT file_size_in_bytes FROM {ident}.files WHERE content = 0").collect())


def _append(spark: SparkSession, ident: str, start: int, rows: int) -> None:
    """One data file of ``rows`` rows that hardly compress (``rows`` × ~70 bytes)."""
    spark.range(start, start + rows, numPartitions=1).selectExpr(
        "id", "sha2(cast(id as string), 256) v").writeTo(ident).append()


def test_compaction_leaves_compacted_files_until_they_add_up_to_a_full_one(
        spark: SparkSession, icetide_settings: Settings) -> None:
    # target 64 KiB: small < 4 KiB (a few rows), full-sized ≥ 48 KiB; ~600 rows ≈ 40 KiB
    policy = EAGER.model_copy(update={"target_file_size": 64 << 10, "min_input_files": 4})
    maintainer = Maintainer(spark, _settings(icetide_settings, policy))
    ident = "lake.mt.tiers"
    spark.sql(f"CREATE TABLE {ident} (id bigint, v string) USING iceberg")
    _append(spark, ident, 0, 600)
    for b in range(4):
        _append(spark, ident, 1000 + 10 * b, 10)
    medium = max(_sizes(spark, ident))
    assert 4 << 10 <= medium < 48 << 10
    report = maintainer.run("mt.tiers")
    assert report.actions.compaction.files == "small only"
    assert report.actions.compaction.done.rewritten_data_files_count == 4
    assert medium in _sizes(spark, ident) and len(_sizes(spark, ident)) == 2
    for b in range(2):  # medium files: 3 × ~40 KiB ≥ 64 KiB, so the next pass merges them
        _append(spark, ident, 2000 + 1000 * b, 600)
    report = maintainer.run("mt.tiers")
    assert report.actions.compaction.files == "all below full size"
    assert report.actions.compaction.done.rewritten_data_files_count == 4
    assert spark.table(ident).count() == 600 * 3 + 40


def _rewrite_job_tasks(spark: SparkSession) -> dict[int, int]:
    """Tasks of each Spark job Iceberg ran to rewrite data files (its job groups)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    found = {}
    for k in range(jobs.size()):
        job = jobs.apply(k)
        group = job.jobGroup()
        if group.isDefined() and "REWRITE-DATA-FILES" in str(group.get()).upper():
            found[int(job.jobId())] = int(job.numTasks())
    return found


def test_a_routine_pass_holds_one_core_at_a_time(
        spark: SparkSession, icetide_settings: Settings) -> None:
    # target 1 MiB (small < 64 KiB): 120 small files of ~26 KiB, ~3 MiB in all; in one
    # group they would be one job of about three tasks
    policy = EAGER.model_copy(update={"target_file_size": 1 << 20, "min_input_files": 4})
    ident = "lake.mt.one_core"
    spark.sql(f"CREATE TABLE {ident} (id bigint, v string) USING iceberg")
    spark.range(0, 84_000, numPartitions=120).selectExpr(
        "id", "sha2(cast(id as string), 256) v").writeTo(ident).append()
    before = _rewrite_job_tasks(spark)
    report = Maintainer(spark, _settings(icetide_settings, policy)).run(
        "mt.one_core", orphans=False)

    assert report.actions.compaction.files == "small only"
    assert report.actions.compaction.done.rewritten_data_files_count == 120
    assert report.actions.compaction.done.added_data_files_count >= 3  # groups of ≤ 1 MiB
    tasks = [n for j, n in _rewrite_job_tasks(spark).items() if j not in before]
    assert tasks and max(tasks) == 1, tasks  # every rewrite job: one task, one core
    assert spark.table(ident).count() == 84_000
