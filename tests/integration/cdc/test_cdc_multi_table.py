"""One CDC flow following several tables (include/exclude) with one position.

The declared target is the flow's anchor; the other tables are side tables carrying the
same marker. A crash after the side tables committed and before the anchor did is
finished by the next run without applying anything twice.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cdc_pipeline_helpers import execute as _sql
from cdc_pipeline_helpers import lake_rows, mysql_rows, unique, write_pipeline
from pyspark.sql import DataFrame, SparkSession

from icetide.cdc.apply import CdcSink
from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.engine.run import PipelineRun
from icetide.flows.loop import FlowLoop
from icetide.lake import commit
from icetide.lake.sinks import Props, WriteResult
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.products", primary_key=["productId"], changelog=True)
dp.create_auto_cdc_flow(
    target="{lake_db}.products",
    source=mysql.binlog("shop", include=[r"{db}\\..*"], exclude=[r".*\\.skipped"],
                        into="{lake_db}"),
    keys=["productId"], sequence_by="_pos")
'''
MEMBER_COLS = ["userid", "name", "show_params", "memberLevel", "update_time"]
PRODUCT_COLS = ["productId", "name", "description", "product_price", "update_time"]


class CrashAfterSides(CdcSink):
    """Commits the side tables, then dies before the anchor (a kill between commits)."""

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        for ident in sorted(self.apply.pending):
            if ident not in sides_done:
                self.apply.sink_of(ident).write(spark, self.apply.pending[ident], ident,
                                                props, sides_done)
        self.apply.pending = {}
        raise RuntimeError("killed between the side tables' and the anchor's commits")


def test_many_tables_one_position(mariadb: MariaDBInfo, spark: SparkSession,
                                  icetide_settings: Settings, tmp_path: Path) -> None:
    db, lake_db = unique("shop"), unique("dim")
    conn = mariadb.connect()
    seed_shop(conn, db)
    conn.close()
    _sql(mariadb, f"CREATE TABLE `{db}`.skipped (id INT PRIMARY KEY)",
         f"INSERT INTO `{db}`.skipped VALUES (1)")
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db,
                            FLOWS.format(db=db, lake_db=lake_db))
    run = PipelineRun(spark, icetide_settings, load_pipeline(folder))
    try:
        run.run_once()
        products, members = f"lake.{lake_db}.products", f"lake.{lake_db}.user_member"
        assert lake_rows(spark, members, MEMBER_COLS) == mysql_rows(
            mariadb, f"{db}.user_member", MEMBER_COLS)
        assert not spark.catalog.tableExists(f"lake.{lake_db}.skipped")

        _sql(mariadb, f"UPDATE `{db}`.user_member SET memberLevel = 7",
             f"UPDATE `{db}`.products SET name = 'renamed' WHERE productId = '1'",
             f"CREATE TABLE `{db}`.extra (id INT PRIMARY KEY, v VARCHAR(5))",
             f"INSERT INTO `{db}`.extra VALUES (1, 'a'), (2, 'b')")
        flow = run.compile(run.flows[0])
        assert isinstance(flow.sink, CdcSink)
        crashing = FlowLoop(spark, dataclasses.replace(flow, sink=CrashAfterSides(flow.sink.apply)))
        with pytest.raises(RuntimeError, match="killed"):
            crashing.run_until_caught_up()
        assert spark.table(members).where("memberLevel = 7").count() == 5  # side committed
        assert spark.table(products).where("name = 'renamed'").count() == 0  # anchor not

        run.run_once()  # finishes the half-committed batch, then goes on
        assert lake_rows(spark, products, PRODUCT_COLS) == mysql_rows(
            mariadb, f"{db}.products", PRODUCT_COLS)
        assert lake_rows(spark, members, MEMBER_COLS) == mysql_rows(
            mariadb, f"{db}.user_member", MEMBER_COLS)
        assert lake_rows(spark, f"lake.{lake_db}.extra", ["id", "v"]) == {("1", "a"), ("2", "b")}
        member_log = spark.table(f"{members}__changelog").where("_op = '+U'")
        assert member_log.count() == 5  # each update once: nothing applied twice
        anchor = commit.last_marker(spark, products, flow.name)
        side = commit.last_marker(spark, members, flow.name)
        assert anchor is not None and side is not None and side.end == anchor.end
    finally:
        run.close()
