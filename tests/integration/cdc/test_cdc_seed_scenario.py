"""The seed's scenario: a MariaDB update / delete shows in the lake within two triggers.

"Within two triggers" is asserted in commits, not seconds: the first snapshot of the
target that carries the change is at most the second one committed after the change.
Seconds would measure the machine (a loaded CI runner took 24 s); commits measure the
flow.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cdc_pipeline_helpers import dims_flows, unique, write_pipeline
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.engine.run import PipelineRun
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

TRIGGER = 5.0  # seconds, the clickstream example's trigger interval
TIMEOUT = 300.0  # seconds before a change that never shows fails the test


def _wait(check: Callable[[], bool], timeout: float) -> None:
    """Until ``check()`` holds (polling the lake), or fail after ``timeout``."""
    began = time.monotonic()
    while not check():
        assert time.monotonic() - began < timeout, f"not visible after {timeout:.0f}s"
        time.sleep(0.2)


def _commits_until(spark: SparkSession, table: str, since_ms: int, shows: str) -> int:
    """How many snapshots of ``table`` committed since ``since_ms`` until ``shows`` held.

    ``shows`` is a boolean aggregate over the table; 1 means the first commit after the
    change carried it.
    """
    rows = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots WHERE committed_at >= "
                     f"timestamp_millis({since_ms}) ORDER BY committed_at").collect()
    for n, row in enumerate(rows, start=1):
        if spark.sql(f"SELECT {shows} FROM {table} VERSION AS OF {row[0]}").collect()[0][0]:
            return n
    raise AssertionError(f"no snapshot of {table} since {since_ms} shows {shows}")


def test_update_and_delete_visible_within_two_triggers(
        mariadb: MariaDBInfo, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    db, lake_db = unique("shop"), unique("dim")
    conn = mariadb.connect()
    seed_shop(conn, db)
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db, dims_flows(db, lake_db),
                            trigger=f"{TRIGGER:g}s")
    run = PipelineRun(spark, icetide_settings, load_pipeline(folder))
    stop, errors = threading.Event(), []

    def drive() -> None:
        try:
            run.run_forever(stop)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    members, products = f"lake.{lake_db}.user_member", f"lake.{lake_db}.products"
    try:
        _wait(lambda: spark.catalog.tableExists(members)
              and spark.table(members).count() == 5
              and spark.catalog.tableExists(products)
              and spark.table(products).count() == 9, 300)
        time.sleep(TRIGGER)  # let both flows reach the binlog phase and idle
        updated_at = int(time.time() * 1000)
        with conn.cursor() as cur:
            cur.execute(f"UPDATE `{db}`.user_member SET memberLevel = 2 "
                        "WHERE userid = '555655'")
        level = f"SELECT memberLevel FROM {members} WHERE userid = '555655'"
        _wait(lambda: spark.sql(level).collect()[0][0] == 2, TIMEOUT)
        deleted_at = int(time.time() * 1000)
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM `{db}`.products WHERE productId = '4'")
        _wait(lambda: spark.table(products).where("productId = '4'").count() == 0, TIMEOUT)
    finally:
        stop.set()
        thread.join(120)
        run.close()
        conn.close()
    assert not errors, errors
    assert _commits_until(spark, members, updated_at,
                          "count_if(userid = '555655' AND memberLevel = 2) = 1") <= 2
    assert _commits_until(spark, products, deleted_at, "count_if(productId = '4') = 0") <= 2
