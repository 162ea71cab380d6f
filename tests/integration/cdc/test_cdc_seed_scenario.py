"""The seed's scenario: a MariaDB update / delete shows in the lake within two triggers."""

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


def _wait(check: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``check()`` holds (polling the lake), or fail after ``timeout``."""
    began = time.monotonic()
    while not check():
        assert time.monotonic() - began < timeout, f"not visible after {timeout:.0f}s"
        time.sleep(0.2)
    return time.monotonic() - began


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
        with conn.cursor() as cur:
            cur.execute(f"UPDATE `{db}`.user_member SET memberLevel = 2 "
                        "WHERE userid = '555655'")
        level = f"SELECT memberLevel FROM {members} WHERE userid = '555655'"
        updated = _wait(lambda: spark.sql(level).collect()[0][0] == 2, 2 * TRIGGER + 30)
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM `{db}`.products WHERE productId = '4'")
        gone = _wait(lambda: spark.table(products).where("productId = '4'").count() == 0,
                     2 * TRIGGER + 30)
    finally:
        stop.set()
        thread.join(120)
        run.close()
        conn.close()
    assert not errors, errors
    assert updated <= 2 * TRIGGER, f"update visible after {updated:.1f}s"
    assert gone <= 2 * TRIGGER, f"delete visible after {gone:.1f}s"
