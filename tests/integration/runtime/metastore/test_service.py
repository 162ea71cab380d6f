"""icetide's metastore service on loopback: Spark and pyiceberg share tables by name.

``hms``: tests/integration/runtime/conftest.py."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.query.duckdb_path import run_duckdb
from icetide.runtime.catalogs import pyiceberg_catalog
from icetide.runtime.metastore.service import ensure_metastore, running, stop_metastore
from icetide.runtime.metastore.site import MetastorePaths

pytestmark = pytest.mark.spark


def test_service_binds_loopback_and_is_shared(hms: Settings) -> None:
    state = running(hms)
    assert state is not None and state.host == "127.0.0.1"
    assert ensure_metastore(hms) == state  # a second caller finds the same process
    paths = MetastorePaths.of(hms)
    assert json.loads(paths.state.read_text())["pid"] == state.pid
    assert "jdbc:derby:;databaseName=" in (paths.conf_dir / "hive-site.xml").read_text()


def test_spark_writes_merge_on_read_pyiceberg_and_duckdb_read_by_name(
        spark: SparkSession, hms: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS hms.shop")
    spark.sql("CREATE TABLE hms.shop.orders (id BIGINT NOT NULL, amount DECIMAL(10,2)) USING "
              "iceberg TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read',"
              " 'write.merge.mode'='merge-on-read')")
    spark.sql("INSERT INTO hms.shop.orders VALUES (1, 9.50), (2, 20.00), (3, 1.25)")
    spark.sql("DELETE FROM hms.shop.orders WHERE id = 2")
    spark.sql("MERGE INTO hms.shop.orders t USING (SELECT 3L AS id, 2.75BD AS amount) s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = s.amount")
    want = spark.sql("SELECT count(*), sum(amount) FROM hms.shop.orders").collect()[0]
    # by name, through the service: pyiceberg as the docs tell users to connect ...
    uri = f"thrift://127.0.0.1:{hms.metastore.port}"
    catalog = load_catalog("hms", type="hive", uri=uri)
    assert ("shop", "orders") in catalog.list_tables("shop")
    table = catalog.load_table("shop.orders")
    assert any(s.summary is not None and s.summary.get("added-position-delete-files")
               for s in table.snapshots())  # the deletes are there, and applied:
    rows = table.scan().to_arrow()
    assert (rows.num_rows, sum(rows.column("amount").to_pylist())) == (want[0], want[1])
    # ... and icetide's own readers (status/tables and the DuckDB path)
    duck = run_duckdb(hms, "SELECT count(*), sum(amount) FROM shop.orders")
    assert duck.rows == [(want[0], want[1])]


def test_pyiceberg_writes_spark_reads(spark: SparkSession, hms: Settings) -> None:
    catalog = pyiceberg_catalog(hms)
    catalog.create_namespace_if_not_exists("py")  # type: ignore[attr-defined]
    data = pa.table({"id": pa.array([7, 8], pa.int64()), "tag": pa.array(["x", "y"])})
    table = catalog.create_table("py.tags", schema=data.schema)  # type: ignore[attr-defined]
    table.append(data)
    got = spark.sql("SELECT id, tag FROM hms.py.tags ORDER BY id").collect()
    assert [(r.id, r.tag) for r in got] == [(7, "x"), (8, "y")]


def test_restart_keeps_tables(spark: SparkSession, hms: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS hms.keep")
    spark.sql("CREATE TABLE IF NOT EXISTS hms.keep.t (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO hms.keep.t VALUES (1), (2)")
    first = stop_metastore(hms)
    assert first is not None and running(hms) is None
    second = ensure_metastore(hms)
    assert second.pid != first.pid
    assert spark.sql("SELECT count(*) FROM hms.keep.t").collect()[0][0] == 2
    spark.sql("INSERT INTO hms.keep.t VALUES (3)")  # the commit lock works after a restart
    assert spark.sql("SELECT count(*) FROM hms.keep.t").collect()[0][0] == 3
