"""kill -9 of ``icetide maintain`` mid-compaction and mid-expiry: the table keeps every
row, consumers resume exactly where they stopped, leftovers go only after the safety age."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import MaintenanceConfig, Settings
from icetide.lake import commit
from icetide.maintainer import Maintainer
from icetide.model.markers import Marker
from icetide.sources.iceberg import IcebergTableSource

pytestmark = pytest.mark.spark

EAGER = MaintenanceConfig(snapshot_retention=0, retain_last=1, min_input_files=2,
                          orphan_interval=1)


def _table(spark: SparkSession, name: str, commits: int, files: int) -> list[int]:
    ident = f"lake.k9.{name}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.k9")
    spark.sql(f"CREATE TABLE {ident} (id bigint, v string) USING iceberg")
    snaps = []
    for c in range(commits):
        rows = spark.range(c * 20_000, (c + 1) * 20_000).selectExpr("id", "uuid() v")
        commit.append(rows.repartition(files), ident,
                      Marker("up", {"c": c}, {"c": c + 1}).to_summary())
        snaps.append(int(commit.load_table(spark, ident).currentSnapshot().snapshotId()))
    return snaps


def _consumer(spark: SparkSession, name: str, source: str, snapshot: int) -> None:
    ident = f"lake.k9.{name}"
    spark.sql(f"CREATE TABLE {ident} (id bigint) USING iceberg")
    pos = {f"iceberg:{source}": {"snapshot": snapshot}}
    commit.commit_marker_only(spark, ident, Marker("down", {}, pos).to_summary())


def _kill_maintain_at(settings: Settings, table: str, step: str, tmp: Path, delay: float
                      ) -> str:
    env = dict(os.environ)
    env.update({
        "ICETIDE_HOME": str(settings.home), "ICETIDE_CATALOG__TYPE": "hadoop",
        "ICETIDE_CATALOG__NAME": "lake", "ICETIDE_SPARK__MASTER": "local[1]",
        "ICETIDE_SPARK__DRIVER_MEMORY": "1g", "ICETIDE_MAINTENANCE__SNAPSHOT_RETENTION": "0",
        "ICETIDE_MAINTENANCE__RETAIN_LAST": "1", "ICETIDE_MAINTENANCE__MIN_INPUT_FILES": "2",
    })
    log = tmp / f"maintain-{step}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "icetide.cli", "-v", "maintain", table],
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while f"{step} of lake.{table}: starting".encode() not in log.read_bytes():
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "maintain did not reach " + step
            time.sleep(0.05)
        time.sleep(delay)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    return log.read_text()


def _age_files(location: str) -> None:
    two_days_ago = time.time() - 2 * 86400
    for dirpath, _, names in os.walk(location.removeprefix("file:")):
        for name in names:
            os.utime(Path(dirpath) / name, (two_days_ago, two_days_ago))


def test_kill9_mid_compaction(spark: SparkSession, icetide_settings: Settings,
                              tmp_path: Path) -> None:
    ident = "lake.k9.comp"
    snaps = _table(spark, "comp", 3, 16)
    _consumer(spark, "comp_down", ident, snaps[0])
    before = spark.sql(f"SELECT count(*), sum(id), sum(hash(v)) FROM {ident}").collect()
    _kill_maintain_at(icetide_settings, "k9.comp", "compaction", tmp_path, 2.0)

    assert spark.sql(f"SELECT count(*), sum(id), sum(hash(v)) FROM {ident}").collect() == before
    settings = icetide_settings.model_copy(update={"maintenance": EAGER})
    young = Maintainer(spark, settings, dry_run=True).run("k9.comp")
    assert young.actions.orphans.orphan_files == 0  # leftovers are younger than 1 day
    _age_files(str(commit.load_table(spark, ident).location()))
    report = Maintainer(spark, settings).run("k9.comp")  # the next pass finishes the job
    assert report.after is not None and report.after.data_files <= 3
    assert spark.sql(f"SELECT count(*), sum(id), sum(hash(v)) FROM {ident}").collect() == before
    src = IcebergTableSource(spark, ident)
    batch = src.plan({"snapshot": snaps[0]})
    assert batch is not None and src.read(spark, batch).count() == 40_000


def test_kill9_mid_expiry(spark: SparkSession, icetide_settings: Settings,
                          tmp_path: Path) -> None:
    ident = "lake.k9.exp"
    snaps = _table(spark, "exp", 12, 1)
    _consumer(spark, "exp_down", ident, snaps[5])
    _kill_maintain_at(icetide_settings, "k9.exp", "expiry", tmp_path, 0.3)

    assert spark.table(ident).count() == 12 * 20_000
    marker = commit.last_marker(spark, ident, "up")
    assert marker is not None and marker.end == {"c": 12}
    src = IcebergTableSource(spark, ident)
    batch = src.plan({"snapshot": snaps[5]})
    assert batch is not None and src.read(spark, batch).count() == 6 * 20_000
    settings = icetide_settings.model_copy(update={"maintenance": EAGER})
    Maintainer(spark, settings).run("k9.exp")
    kept = {int(s.snapshotId()) for s in commit.load_table(spark, ident).snapshots()}
    assert set(snaps[5:]) <= kept and not set(snaps[:5]) & kept
