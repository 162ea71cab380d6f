"""MySQL CDC into Iceberg through `create_auto_cdc_flow` (real MariaDB, Spark, Iceberg)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdc_pipeline_helpers import dims_flows, lake_rows, mysql_rows, unique, write_pipeline
from cdc_pipeline_helpers import execute as _sql
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.engine.run import PipelineRun
from icetide.errors import SchemaChangeError
from icetide.lake import commit
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

PRODUCT_COLS = ["productId", "name", "description", "product_price", "update_time"]
MEMBER_COLS = ["userid", "name", "show_params", "memberLevel", "update_time"]


def test_seed_tables_land_with_types_and_follow_changes(
        mariadb: MariaDBInfo, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    db, lake_db = unique("shop"), unique("dim")
    conn = mariadb.connect()
    seed_shop(conn, db)
    conn.close()
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db,
                            dims_flows(db, lake_db, ", table_properties={'format-version': '3'}"))
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    products, members = f"lake.{lake_db}.products", f"lake.{lake_db}.user_member"
    types = {f.name: f.dataType.simpleString() for f in spark.table(products).schema.fields}
    assert types["product_price"] == "decimal(10,4)" and types["update_time"] == "timestamp"
    assert lake_rows(spark, products, PRODUCT_COLS) == mysql_rows(
        mariadb, f"{db}.products", PRODUCT_COLS)
    assert lake_rows(spark, members, MEMBER_COLS) == mysql_rows(
        mariadb, f"{db}.user_member", MEMBER_COLS)
    table = commit.load_table(spark, products)
    assert table.operations().current().formatVersion() == 3
    assert list(table.schema().identifierFieldNames()) == ["productId"]
    assert "bucket[16]" in str(table.spec())
    marker = commit.last_marker(spark, products, f"{lake_db}.products")
    assert marker is not None and next(iter(marker.end.values()))["phase"] == "binlog"

    _sql(mariadb, f"UPDATE `{db}`.user_member SET memberLevel = 2 WHERE userid = '555655'",
         f"DELETE FROM `{db}`.products WHERE productId = '2'",
         f"INSERT INTO `{db}`.products VALUES ('99', 'new', 'd', 1.2345, NOW())")
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    assert lake_rows(spark, products, PRODUCT_COLS) == mysql_rows(
        mariadb, f"{db}.products", PRODUCT_COLS)
    level = spark.table(members).where("userid = '555655'").collect()[0]["memberLevel"]
    assert level == 2
    ops = [r["_op"] for r in spark.table(f"{members}__changelog")
           .where("userid = '555655'").orderBy("_seq").collect()]
    assert ops == ["+I", "-U", "+U"]


def test_schema_evolution_without_restart(
        mariadb: MariaDBInfo, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    db, lake_db = unique("shop"), unique("dim")
    conn = mariadb.connect()
    seed_shop(conn, db)
    conn.close()
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db, dims_flows(db, lake_db))
    run = PipelineRun(spark, icetide_settings, load_pipeline(folder))
    try:
        run.run_once()
        _sql(mariadb,
             f"ALTER TABLE `{db}`.user_member ADD COLUMN city VARCHAR(20)",
             f"UPDATE `{db}`.user_member SET city = 'Oslo' WHERE userid = '555655'",
             f"ALTER TABLE `{db}`.user_member RENAME COLUMN show_params TO params",
             f"ALTER TABLE `{db}`.user_member MODIFY memberLevel BIGINT",
             f"ALTER TABLE `{db}`.user_member DROP COLUMN name",
             f"UPDATE `{db}`.user_member SET memberLevel = 5000000000 WHERE userid = '555655'")
        run.run_once()  # the same process: no restart
        members = f"lake.{lake_db}.user_member"
        fields = {f.name: f.dataType.simpleString() for f in spark.table(members).schema.fields}
        assert fields["city"] == "string" and fields["memberLevel"] == "bigint"
        assert "params" in fields and "show_params" not in fields and "name" in fields
        cols = ["userid", "params", "memberLevel", "city"]
        assert lake_rows(spark, members, cols) == mysql_rows(mariadb, f"{db}.user_member", cols)
        assert spark.table(members).where("params IS NULL").count() == 0  # rename kept data

        _sql(mariadb, f"ALTER TABLE `{db}`.user_member MODIFY memberLevel VARCHAR(20)",
             f"UPDATE `{db}`.user_member SET memberLevel = 'gold' WHERE userid = '555655'")
        before = commit.load_table(spark, members).currentSnapshot().snapshotId()
        with pytest.raises(SchemaChangeError, match="memberLevel"):
            run.run_once()
        assert commit.load_table(spark, members).currentSnapshot().snapshotId() == before
    finally:
        run.close()
