"""lake.commit.load_table: current as of the call, with one metastore look-up."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.lake import commit
from icetide.model.markers import Marker

pytestmark = pytest.mark.spark


def test_a_loaded_table_is_current_without_a_second_refresh(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.loadtest")
    spark.sql("CREATE TABLE lake.loadtest.t (id int) USING iceberg")
    held = commit.load_table(spark, "lake.loadtest.t")
    spark.sql("INSERT INTO lake.loadtest.t VALUES (1)")
    spark.sql("INSERT INTO lake.loadtest.t VALUES (2)")
    loaded = commit.load_table(spark, "lake.loadtest.t")
    assert held.currentSnapshot() is None  # a handle is not refreshed behind one's back
    assert loaded.currentSnapshot() is not None
    assert loaded.currentSnapshot().summary().get("total-records") == "2"


def test_only_a_catalog_that_may_cache_tables_is_refreshed(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.catalog.lake.cache-enabled") == "false"
    assert not commit._caches_tables(spark, "lake.loadtest.t")
    assert not commit._caches_tables(spark, "loadtest.t")  # the default catalog: lake
    assert commit._caches_tables(spark, "elsewhere.db.t")  # Iceberg's default: cached


def test_a_table_dropped_and_created_again_is_read_afresh(spark: SparkSession) -> None:
    """A Hadoop catalog restarts at v1.metadata.json: the new table's v2 must not be
    served from what was parsed of the old table's v2."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.loadtest")
    ident = "lake.loadtest.again"
    for flow in ("old", "new"):
        spark.sql(f"DROP TABLE IF EXISTS {ident} PURGE")
        spark.sql(f"CREATE TABLE {ident} (id int) USING iceberg")  # v1
        commit.append(spark.createDataFrame([(1,)], "id int"), ident,
                      Marker(flow, {"p": 0}, {"p": 1}, rows=1).to_summary())  # v2
        assert commit.last_marker(spark, ident, flow) is not None
    assert commit.last_marker(spark, ident, "old") is None
