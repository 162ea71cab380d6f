"""Exactly-once under kill -9 for MySQL CDC: snapshot and binlog phases, concurrent writer.

`python -m icetide.cli run PIPELINE` follows two MariaDB tables (a 3 000-row ``items``
read in 300-row snapshot batches, and the seed's ``user_member``) while a writer inserts,
updates (also keys), deletes and rolls back. The pipeline's whole process group is
SIGKILLed at random moments — at least three times while the snapshot is being copied and
three times while the binlog is streamed. After a final `--once` every Iceberg table
equals its MariaDB table row for row.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdc_pipeline_helpers import (
    ITEMS_COLS,
    create_items,
    lake_rows,
    mysql_rows,
    unique,
    write_pipeline,
)
from pyspark.sql import SparkSession
from tests.e2e.pipeline_proc import kill9
from tests.mariadb_writer import Writer

from icetide.config import load_settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.lake import commit
from icetide.runtime.metastore.service import ensure_metastore

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(3600)]

KILLS_PER_PHASE = 3  # × a JVM start each; CI aims at < 40 min in all
ROWS = 3000
MEMBER_COLS = ["userid", "name", "show_params", "memberLevel", "update_time"]
FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.items", primary_key=["id"])
dp.create_streaming_table("{lake_db}.user_member", primary_key=["userid"], changelog=True)
dp.create_auto_cdc_flow(target="{lake_db}.items", source=mysql.binlog("shop", table="{db}.items"),
                        keys=["id"], sequence_by="_pos")
dp.create_auto_cdc_flow(target="{lake_db}.user_member",
                        source=mysql.binlog("shop", table="{db}.user_member"),
                        keys=["userid"], sequence_by="_pos")
'''


@pytest.fixture()
def lake(tmp_path: Path, spark: SparkSession) -> Iterator[tuple[Path, str]]:
    """A private ICETIDE_HOME whose catalog service (the default, started by the first run
    and surviving its kills) the test session reads as `cdce2e`."""
    home = tmp_path / "home"
    port = os.environ["ICETIDE_METASTORE__PORT"]
    # up before the first read (the runs would start it too, and find it running)
    ensure_metastore(load_settings(None, environ={**os.environ, "ICETIDE_HOME": str(home)}))
    spark.conf.set("spark.sql.catalog.cdce2e", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.cdce2e.type", "hive")
    spark.conf.set("spark.sql.catalog.cdce2e.uri", f"thrift://127.0.0.1:{port}")
    spark.conf.set("spark.sql.catalog.cdce2e.warehouse", str(home / "warehouse"))
    spark.conf.set("spark.sql.catalog.cdce2e.cache-enabled", "false")
    yield home, "cdce2e"


def _start(env: dict[str, str], folder: Path, log: Path, *args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "icetide.cli", "-v", "run", str(folder), *args]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _wait_commit(proc: subprocess.Popen[bytes], log: Path, flow: str,
                 timeout: float = 600) -> None:
    """Until this run committed a batch of ``flow`` (so every cycle makes progress)."""
    deadline, needle = time.monotonic() + timeout, f"flow {flow}: committed".encode()
    while needle not in (log.read_bytes() if log.exists() else b""):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "pipeline committed nothing"
        time.sleep(0.2)


def _phase(spark: SparkSession, ident: str, flow: str) -> str:
    if not spark.catalog.tableExists(ident):
        return "snapshot"
    marker = commit.last_marker(spark, ident, flow)
    return "snapshot" if marker is None else str(next(iter(marker.end.values()))["phase"])


def _wait_phase(spark: SparkSession, ident: str, flow: str, proc: subprocess.Popen[bytes],
                phase: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while _phase(spark, ident, flow) != phase:
        assert proc.poll() is None and time.monotonic() < deadline, f"never reached {phase}"
        time.sleep(1.0)


def _kill_cycles(spark: SparkSession, env: dict[str, str], folder: Path, tmp: Path,
                 items: str, flow: str) -> dict[str, int]:
    rng, kills = random.Random(20261122), {"snapshot": 0, "binlog": 0}
    cycle = 0
    while min(kills.values()) < KILLS_PER_PHASE:
        phase = _phase(spark, items, flow)
        log = tmp / f"run-{cycle}.log"
        proc = _start(env, folder, log, "--trigger-interval", "1")
        try:
            _wait_commit(proc, log, flow)
            if phase == "snapshot" and kills["snapshot"] >= KILLS_PER_PHASE:
                _wait_phase(spark, items, flow, proc, "binlog")  # enough: let it finish
            # the snapshot lasts a few batches: kill it within a second of a commit, or it
            # may finish before it was killed often enough (seen in CI: 2 kills, then done)
            time.sleep(rng.uniform(0.0, 1.0 if phase == "snapshot" else 6.0))
            during = _phase(spark, items, flow)  # the phase the kill interrupts
        finally:
            kill9(proc)
        kills[during] += 1
        cycle += 1
        assert during == "snapshot" or kills["snapshot"] >= KILLS_PER_PHASE, (
            f"the snapshot finished after {kills['snapshot']} kills: kill it sooner")
        assert cycle < 40, kills
    return kills


def test_kill9_snapshot_and_binlog_exactly_once(
        tmp_path: Path, spark: SparkSession, mariadb: MariaDBInfo,
        lake: tuple[Path, str]) -> None:
    home, cat = lake
    db, lake_db = unique("k9"), unique("k9dim")
    conn = mariadb.connect()
    seed_shop(conn, db)
    conn.close()
    create_items(mariadb, db, ROWS)
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db, FLOWS.format(db=db, lake_db=lake_db),
                            chunk_size=100, max_records=300, trigger="1s")
    env = {**os.environ, "ICETIDE_HOME": str(home), "ICETIDE_SPARK__MASTER": "local[2]",
           "ICETIDE_SPARK__DRIVER_MEMORY": "1g"}
    writer = Writer(mariadb, f"{db}.items", ROWS, seed=11, pause=0.1,
                    members=f"{db}.user_member")
    writer.start()
    items = f"{cat}.{lake_db}.items"
    try:
        kills = _kill_cycles(spark, env, folder, tmp_path, items, f"{lake_db}.items")
    finally:
        writer.stop()
    write_pipeline(folder, mariadb, lake_db, FLOWS.format(db=db, lake_db=lake_db),
                   chunk_size=1000, max_records=20000)  # drain in big batches
    final = subprocess.run([sys.executable, "-m", "icetide.cli", "run", str(folder), "--once"],
                           env=env, capture_output=True, text=True, timeout=900)
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    assert kills["snapshot"] >= KILLS_PER_PHASE and kills["binlog"] >= KILLS_PER_PHASE
    assert writer.ops > 100
    assert lake_rows(spark, items, ITEMS_COLS) == mysql_rows(mariadb, f"{db}.items", ITEMS_COLS)
    members = f"{cat}.{lake_db}.user_member"
    assert lake_rows(spark, members, MEMBER_COLS) == mysql_rows(
        mariadb, f"{db}.user_member", MEMBER_COLS)
