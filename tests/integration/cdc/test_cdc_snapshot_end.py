"""The snapshot → binlog switch when the last snapshot batch has no rows (real MariaDB).

A table whose row count is a multiple of ``max_records`` (or an empty table) ends its
snapshot with a batch of zero rows that only moves the position to the binlog phase. That
batch must be committed too: otherwise every later run re-plans the finished snapshot,
finds nothing, and the flow never reads the binlog (updates silently missing).
"""

from __future__ import annotations

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

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.engine.run import PipelineRun
from icetide.lake import commit
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql
dp.create_streaming_table("{lake_db}.items", primary_key=["id"])
dp.create_auto_cdc_flow(target="{lake_db}.items", source=mysql.binlog("shop", table="{table}"),
                        keys=["id"], sequence_by="_pos")
'''


@pytest.mark.parametrize("rows", [10, 0])
def test_binlog_follows_a_snapshot_ending_on_a_batch_boundary(
        mariadb: MariaDBInfo, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path, rows: int) -> None:
    db, lake_db = unique("shop"), unique("dim")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db}`")
    conn.close()
    table = create_items(mariadb, db, rows)
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db,
                            FLOWS.format(lake_db=lake_db, table=table),
                            chunk_size=5, max_records=5)
    ident = f"lake.{lake_db}.items"
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    marker = commit.last_marker(spark, ident, f"{lake_db}.items")
    assert marker is not None and next(iter(marker.end.values()))["phase"] == "binlog"

    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"UPDATE `{db}`.items SET qty = qty + 100 WHERE id <= 3")
        cur.execute(f"INSERT INTO `{db}`.items VALUES (99, 'new', 1, 2.5, NOW(), 'n')")
    conn.close()
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    assert lake_rows(spark, ident, ITEMS_COLS) == mysql_rows(mariadb, table, ITEMS_COLS)
