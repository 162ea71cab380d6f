"""JDBC catalog on a real PostgreSQL: Spark's JdbcCatalog and pyiceberg's SqlCatalog share it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psycopg2
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyspark.sql import SparkSession

from icetide.config import CatalogConfig, Settings
from icetide.devkit.embedded.postgres import EmbeddedPostgres
from icetide.query.catalog_info import all_tables
from icetide.query.duckdb_path import run_duckdb
from icetide.query.spark_sql import run_sql
from icetide.runtime.catalogs import catalog_conf, pyiceberg_catalog

pytestmark = [pytest.mark.spark, pytest.mark.postgres]


@pytest.fixture(scope="module")
def pg_settings(
    spark: SparkSession, postgres: EmbeddedPostgres, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    """Settings of a jdbc catalog ``pg``, registered in the running session at runtime."""
    settings = Settings(
        home=tmp_path_factory.mktemp("pg-home"),
        catalog=CatalogConfig(name="pg", type="jdbc", uri=postgres.jdbc_url, user=postgres.user),
    )
    for key, value in catalog_conf(settings).items():
        if key.startswith("spark.sql.catalog.pg"):
            spark.conf.set(key, value)
    return settings


def test_spark_writes_pyiceberg_reads(spark: SparkSession, pg_settings: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS `pg`.`shop`")
    spark.sql(
        "CREATE TABLE `pg`.`shop`.`orders` (id BIGINT, amount DECIMAL(10,2)) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql("INSERT INTO `pg`.`shop`.`orders` VALUES (1, 9.50), (2, 20.00), (3, 1.25)")
    spark.sql("DELETE FROM `pg`.`shop`.`orders` WHERE id = 2")
    catalog = pyiceberg_catalog(pg_settings)
    assert ("shop", "orders") in all_tables(catalog)
    rows = catalog.load_table("shop.orders").scan().to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], str(r["amount"])) for r in rows] == [(1, "9.50"), (3, "1.25")]
    duck = run_duckdb(pg_settings, "SELECT count(*), sum(amount) FROM shop.orders")
    assert [(n, str(s)) for n, s in duck.rows] == [(2, "10.75")]


def test_pyiceberg_writes_spark_reads(spark: SparkSession, pg_settings: Settings) -> None:
    catalog = pyiceberg_catalog(pg_settings)
    assert isinstance(catalog, SqlCatalog) and catalog.name == "pg"
    data = pa.table({"id": pa.array([7, 8], pa.int64()), "tag": pa.array(["x", "y"])})
    catalog.create_namespace_if_not_exists("py")
    table = catalog.create_table("py.tags", schema=data.schema)
    table.append(data)
    result = run_sql(spark, "SELECT id, tag FROM `pg`.`py`.`tags` ORDER BY id")
    assert result.rows == [(7, "x"), (8, "y")]


def test_catalog_rows_are_in_postgres(pg_settings: Settings, postgres: EmbeddedPostgres) -> None:
    with psycopg2.connect(postgres.dsn()) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT table_namespace, table_name FROM iceberg_tables WHERE catalog_name = 'pg' "
            "ORDER BY 1, 2"
        )
        assert ("shop", "orders") in cur.fetchall()
    assert Path(pg_settings.warehouse).is_dir()


def test_embedded_postgres_keeps_data_across_restarts() -> None:
    base = Path(tempfile.mkdtemp(prefix="icetide-pg-keep-"))  # /tmp: reachable by `postgres`
    try:
        with EmbeddedPostgres(base_dir=base, durable=False) as first:
            with psycopg2.connect(first.dsn()) as conn, conn.cursor() as cur:
                cur.execute("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
            conn.close()
        with EmbeddedPostgres(base_dir=base, durable=False) as again:
            with psycopg2.connect(again.dsn()) as conn, conn.cursor() as cur:
                cur.execute("SELECT v FROM kept")
                assert cur.fetchall() == [(42,)]
            conn.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
