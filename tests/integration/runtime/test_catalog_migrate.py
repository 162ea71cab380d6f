"""A Hadoop-catalog lake registered into the metastore: same files, rows and positions."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.app.catalog import migrate_into_catalog
from icetide.config import Settings
from icetide.errors import TableError
from icetide.lake import commit
from icetide.model.markers import Marker

pytestmark = pytest.mark.spark


def _hadoop_lake(spark: SparkSession, warehouse: Path) -> None:
    spark.conf.set("spark.sql.catalog.old", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.old.type", "hadoop")
    spark.conf.set("spark.sql.catalog.old.warehouse", str(warehouse))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS old.mig")
    spark.sql("CREATE TABLE old.mig.events (k STRING, v BIGINT) USING iceberg")
    df = spark.createDataFrame([("a", 1), ("b", 2)], "k string, v bigint")
    commit.append(df, "old.mig.events", Marker("f", {}, {"p0": 2}, rows=2).to_summary())
    spark.sql("CREATE TABLE old.mig.dims (id BIGINT NOT NULL, name STRING) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    spark.sql("INSERT INTO old.mig.dims VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    spark.sql("DELETE FROM old.mig.dims WHERE id = 2")


def test_migrate_registers_in_place_and_keeps_markers(
        spark: SparkSession, hms: Settings, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    _hadoop_lake(spark, warehouse)
    planned = migrate_into_catalog(hms, warehouse, dry_run=True)
    assert {(m.table, m.outcome) for m in planned} == {
        ("mig.events", "would register"), ("mig.dims", "would register")}
    done = migrate_into_catalog(hms, warehouse)
    assert {(m.table, m.outcome) for m in done} == {
        ("mig.events", "registered"), ("mig.dims", "registered")}
    assert all(m.metadata_location.startswith(str(warehouse)) for m in done)  # not copied
    assert sorted(spark.table("hms.mig.dims").collect()) == [(1, "x"), (3, "z")]
    marker = commit.last_marker(spark, "hms.mig.events", "f")
    assert marker is not None and marker.end == {"p0": 2}  # the flow resumes where it was
    spark.sql("INSERT INTO hms.mig.events VALUES ('c', 3)")  # and commits through the service
    assert spark.table("hms.mig.events").count() == 3
    again = migrate_into_catalog(hms, warehouse)  # idempotent
    assert {(m.table, m.outcome) for m in again} == {
        ("mig.events", "already registered"), ("mig.dims", "already registered")}


def test_migrate_refuses_a_name_with_other_metadata(
        spark: SparkSession, hms: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS hms.clash")
    spark.sql("CREATE TABLE IF NOT EXISTS hms.clash.t (id BIGINT) USING iceberg")
    spark.conf.set("spark.sql.catalog.old2", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.old2.type", "hadoop")
    spark.conf.set("spark.sql.catalog.old2.warehouse", str(tmp_path / "wh2"))
    spark.sql("CREATE TABLE old2.clash.t (id BIGINT) USING iceberg")
    with pytest.raises(TableError, match=r"'clash.t' is already in the target catalog at another"):
        migrate_into_catalog(hms, tmp_path / "wh2")
