"""Helpers of the CDC pipeline tests: a pipeline folder for a MariaDB database, comparisons."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.sources.mysql.schema import quote, quote_table

DIMS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.products", primary_key=["productId"]{products_props})
dp.create_streaming_table("{lake_db}.user_member", primary_key=["userid"], changelog=True)
dp.create_auto_cdc_flow(target="{lake_db}.products",
                        source=mysql.binlog("shop", table="{db}.products"),
                        keys=["productId"], sequence_by="_pos")
dp.create_auto_cdc_flow(target="{lake_db}.user_member",
                        source=mysql.binlog("shop", table="{db}.user_member"),
                        keys=["userid"], sequence_by="_pos")
'''


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def source_yaml(info: MariaDBInfo, chunk_size: int = 1000, max_records: int = 5000,
                extra: str = "") -> str:
    env = f"ICETIDE_TEST_SHOP_PASSWORD_{info.port}"  # secrets only from the environment
    os.environ[env] = info.cdc_password
    return (f"  shop: {{type: mysql, host: {info.host}, port: {info.port}, "
            f"user: {info.cdc_user}, password_env: {env}, "
            f"chunk_size: {chunk_size}, max_records: {max_records}{extra}}}\n")


def write_pipeline(folder: Path, info: MariaDBInfo, lake_db: str, flows: str,
                   chunk_size: int = 1000, max_records: int = 5000,
                   trigger: str = "2s") -> Path:
    """``folder`` with an icetide-pipeline.yml (source ``shop``) and ``flows.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "icetide-pipeline.yml").write_text(
        f"name: cdc_test\ncatalog: lake\ndatabase: {lake_db}\nsources:\n"
        + source_yaml(info, chunk_size, max_records)
        + f"defaults:\n  trigger_interval: {trigger}\n")
    (folder / "flows.py").write_text(flows)
    return folder


def dims_flows(db: str, lake_db: str, products_props: str = "") -> str:
    return DIMS.format(db=db, lake_db=lake_db, products_props=products_props)


def mysql_rows(info: MariaDBInfo, table: str, columns: list[str]) -> set[tuple[Any, ...]]:
    """The upstream rows as tuples of strings (NULL → None), TIMESTAMPs in UTC."""
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cols = ", ".join(f"CAST({quote(c)} AS CHAR)" for c in columns)
        cur.execute(f"SELECT {cols} FROM {quote_table(table)}")
        rows = {tuple(None if v is None else str(v) for v in r) for r in cur.fetchall()}
    conn.close()
    return rows


def lake_rows(spark: SparkSession, ident: str, columns: list[str]) -> set[tuple[Any, ...]]:
    """The lake rows in the same text form as :func:`mysql_rows` (timestamps as UTC)."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    exprs = []
    for f in spark.table(ident).schema.fields:
        if f.name not in columns:
            continue
        kind = f.dataType.simpleString()
        col = f"`{f.name}`"
        if kind.startswith("timestamp"):
            exprs.append(f"date_format({col}, 'yyyy-MM-dd HH:mm:ss') AS {col}")
        else:
            exprs.append(f"CAST({col} AS STRING) AS {col}")
    ordered = spark.table(ident).selectExpr(*exprs).select(*[f"`{c}`" for c in columns])
    return {tuple(r) for r in ordered.collect()}


ITEMS_DDL = ("CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, "
             "qty INT, price DECIMAL(10,4), updated TIMESTAMP NULL, note TEXT)")
ITEMS_COLS = ["id", "name", "qty", "price", "updated", "note"]


def create_items(info: MariaDBInfo, db: str, rows: int) -> str:
    """``db.items`` with ids 1..rows; returns the qualified name."""
    table = f"{db}.items"
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute(ITEMS_DDL.format(t=quote_table(table)))
        data = [(i, f"item{i}", i % 17, f"{i / 7:.4f}", f"note {i}") for i in range(1, rows + 1)]
        for at in range(0, rows, 2000):
            cur.executemany(f"INSERT INTO {quote_table(table)} VALUES (%s, %s, %s, %s, NOW(), %s)",
                            data[at:at + 2000])
    conn.close()
    return table





def execute(info: MariaDBInfo, *statements: str) -> None:
    """Run ``statements`` on MariaDB (autocommit), in order."""
    conn = info.connect()
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
    conn.close()


def create_database(info: MariaDBInfo, prefix: str) -> str:
    """A new MariaDB database named ``<prefix>_<random>``; its name."""
    db = unique(prefix)
    execute(info, f"CREATE DATABASE {quote(db)}")
    return db
