"""MySqlSource.read / read_tables build DataFrames with the mapped schema (real Spark)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from mysql_cdc_helpers import new_database
from pyspark.sql import Row, SparkSession

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.errors import SourceError
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]


def test_seed_tables_as_dataframes(mariadb: MariaDBInfo, spark: SparkSession) -> None:
    db = new_database(mariadb, "shop")
    conn = mariadb.connect()
    seed_shop(conn, db)
    with conn.cursor() as cur:
        cur.execute(f"UPDATE `{db}`.products SET update_time = '2024-01-02 03:04:05' "
                    "WHERE productId = '1'")
    products = MySqlSource(MySqlSourceConfig(
        name="products", connection=mariadb.connect_args("cdc"), include=(rf"{db}\.products",)))
    batch = products.plan(products.initial_position())
    assert batch is not None and batch.records == 9
    frame = products.read(spark, batch)
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in frame.schema.fields] == [
        ("productId", "string", False), ("name", "string", True), ("description", "string", True),
        ("product_price", "decimal(10,4)", True), ("update_time", "timestamp", True),
        ("_op", "string", False), ("_pos", "decimal(38,0)", True), ("_ts", "timestamp", True)]
    first = frame.where("productId = '1'").collect()[0]
    assert first["product_price"] == Decimal("11.1100") and first["_op"] == "r"
    utc = frame.where("productId = '1'").selectExpr(
        "date_format(to_utc_timestamp(update_time, current_timezone()), 'yyyy-MM-dd HH:mm:ss')"
    ).collect()[0][0]
    assert utc == "2024-01-02 03:04:05"  # the stored UTC instant, whatever the session zone
    assert isinstance(first["update_time"], dt.datetime)
    products.close()


def test_several_tables_as_dataframes(mariadb: MariaDBInfo, spark: SparkSession) -> None:
    db = new_database(mariadb, "shop")
    conn = mariadb.connect()
    seed_shop(conn, db)
    conn.close()
    both = MySqlSource(MySqlSourceConfig(
        name="shop", connection=mariadb.connect_args("cdc"), include=(rf"{db}\..*",)))
    pos = both.initial_position()
    rows: dict[str, list[Row]] = {}
    while True:
        batch = both.plan(pos)
        assert batch is not None
        for table, df in both.read_tables(spark, batch).items():
            rows.setdefault(table, []).extend(df.collect())
        pos = batch.end
        if pos["phase"] == "binlog":
            break
    assert {t: len(r) for t, r in rows.items()} == {f"{db}.products": 9, f"{db}.user_member": 5}
    member = next(r for r in rows[f"{db}.user_member"] if r["userid"] == "555655")
    assert member["memberLevel"] == 3
    with pytest.raises(SourceError, match="follows 2 tables"):
        both.read(spark, batch)
    both.close()
