"""A purged binlog stops the CDC flow with the position and the remedy; `resnapshot` fixes it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline_helpers import dims_flows, lake_rows, mysql_rows, unique, write_pipeline
from pyspark.sql import SparkSession

from icetide.cdc.reset import request_resnapshot
from icetide.config import Settings
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.engine.run import PipelineRun
from icetide.errors import PositionLostError
from icetide.lake import commit
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

PRODUCT_COLS = ["productId", "name", "description", "product_price", "update_time"]
MEMBER_COLS = ["userid", "name", "show_params", "memberLevel", "update_time"]


def _purge_all_but_current(conn: Any) -> None:
    deadline = time.monotonic() + 30
    with conn.cursor() as cur:
        while True:
            cur.execute("SHOW MASTER STATUS")
            current = cur.fetchone()[0]
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            if [r[0] for r in cur.fetchall()] == [current]:
                return
            assert time.monotonic() < deadline, "binlogs were not purged within 30 s"
            time.sleep(0.2)


def test_purged_binlog_then_resnapshot(spark: SparkSession, icetide_settings: Settings,
                                       tmp_path: Path) -> None:
    with EmbeddedMariaDB(tmp_path / "purge") as info:
        db, lake_db = unique("shop"), unique("dim")
        conn = info.connect()
        seed_shop(conn, db)
        folder = write_pipeline(tmp_path / "p", info, lake_db, dims_flows(db, lake_db))
        with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
            run.run_once()
        products, members = f"lake.{lake_db}.products", f"lake.{lake_db}.user_member"
        marker = commit.last_marker(spark, products, f"{lake_db}.products")
        assert marker is not None
        stored = next(iter(marker.end.values()))
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            cur.execute(f"DELETE FROM `{db}`.products WHERE productId = '3'")
            cur.execute(f"DELETE FROM `{db}`.user_member WHERE userid = '10952'")
            cur.execute(f"UPDATE `{db}`.user_member SET memberLevel = 9")
            cur.execute("FLUSH BINARY LOGS")
        _purge_all_but_current(conn)

        with (pytest.raises(PositionLostError) as lost,
              PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run):
            run.run_once()
        message = str(lost.value)
        assert f"{stored['file']}:{stored['pos']}" in message
        assert "icetide cdc resnapshot" in message and lake_db in message
        assert spark.table(products).count() == 9  # nothing applied, nothing lost

        # by lake table, or by the upstream table the error message names
        for table in (products, f"lake.{db}.user_member"):
            done = request_resnapshot(spark, table)
            assert isinstance(done.previous, dict) and done.previous["phase"] == "binlog"
        assert done.anchor == members
        with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
            run.run_once()
        assert lake_rows(spark, products, PRODUCT_COLS) == mysql_rows(
            info, f"{db}.products", PRODUCT_COLS)
        assert lake_rows(spark, members, MEMBER_COLS) == mysql_rows(
            info, f"{db}.user_member", MEMBER_COLS)
        ops = [r["_op"] for r in spark.table(f"{members}__changelog")
               .where("userid = '10952'").orderBy("_seq").collect()]
        assert ops == ["+I", "-D"]  # emptied by the re-snapshot, not copied again
        conn.close()
