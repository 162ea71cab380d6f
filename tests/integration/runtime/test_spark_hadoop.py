"""Real Spark + Iceberg on the embedded Hadoop catalog, read back by Spark, pyiceberg, DuckDB."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.query.catalog_info import describe, load, table_summaries
from icetide.query.duckdb_path import run_duckdb
from icetide.query.spark_sql import run_sql
from icetide.runtime.catalogs import pyiceberg_catalog
from icetide.runtime.jars import load_spec
from icetide.runtime.session import get_spark

pytestmark = pytest.mark.spark

MOR = (
    "'format-version'='2', 'write.merge.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.delete.mode'='merge-on-read'"
)


@pytest.fixture(scope="module")
def users(spark: SparkSession) -> str:
    """``rt.users``: a bucketed v2 merge-on-read table, 3 rows inserted then a MERGE."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS `lake`.`rt`")
    spark.sql(
        "CREATE TABLE `lake`.`rt`.`users` (id BIGINT NOT NULL, name STRING, score INT) "
        f"USING iceberg PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ({MOR})"
    )
    spark.sql("ALTER TABLE `lake`.`rt`.`users` SET IDENTIFIER FIELDS id")
    spark.sql("INSERT INTO `rt`.`users` VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30)")
    spark.createDataFrame(
        [(2, "bob", 21), (4, "dee", 40)], "id BIGINT, name STRING, score INT"
    ).createOrReplaceTempView("upd")
    spark.sql(
        "MERGE INTO `rt`.`users` t USING upd s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql("DELETE FROM `rt`.`users` WHERE id = 3")
    marker = spark.createDataFrame([(5, "eve", 50)], "id BIGINT, name STRING, score INT")
    marker.writeTo("rt.users").option("snapshot-property.icetide.offsets", "p0:7").append()
    return "rt.users"


EXPECTED = [(1, "ann", 10), (2, "bob", 21), (4, "dee", 40), (5, "eve", 50)]


def test_session_is_cached_and_configured(spark: SparkSession, icetide_settings: Settings) -> None:
    assert get_spark(icetide_settings) is spark
    conf = spark.conf
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.sql.defaultCatalog") == "lake"
    assert conf.get("spark.sql.catalog.lake.cache-enabled") == "false"
    assert conf.get("spark.sql.sources.v2.bucketing.enabled") == "true"
    other = icetide_settings.model_copy(update={"home": icetide_settings.home / "other"})
    with pytest.raises(RuntimeSetupError, match=r"call icetide\.runtime\.session\.stop_spark"):
        get_spark(other)


def test_shaded_jackson_is_loadable(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    mapper = jvm.org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper()
    assert mapper.writeValueAsString(jvm.java.util.HashMap({"a": 1})) == '{"a":1}'


def test_the_stock_jars_of_the_pinned_list_are_on_the_class_path(spark: SparkSession) -> None:
    """Iceberg's own runtime from Maven Central (its shaded HttpClient 5 serves the REST
    catalog, nothing rebuilt) and Spark's Kafka source, at the versions jars.toml pins."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pinned = load_spec().groups["iceberg"].parsed()[0]
    assert jvm.org.apache.iceberg.IcebergBuild.version() == pinned.version
    assert pinned.file_name in spark.conf.get("spark.driver.extraClassPath")
    for name in ("org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic."
                 "HttpClientBuilder", "org.apache.iceberg.rest.RESTCatalog",
                 "org.apache.spark.sql.kafka010.KafkaSourceProvider"):
        assert jvm.java.lang.Class.forName(name).getName() == name


def test_spark_reads_back_after_merge(spark: SparkSession, users: str) -> None:
    result = run_sql(spark, f"SELECT id, name, score FROM {users} ORDER BY id")
    assert result.columns == ["id", "name", "score"]
    assert result.rows == EXPECTED
    limited = run_sql(spark, f"SELECT * FROM {users}", max_rows=2)
    assert len(limited.rows) == 2 and limited.truncated
    deletes = run_sql(spark, f"SELECT count(*) FROM {users}.delete_files").rows[0][0]
    assert deletes >= 1  # merge-on-read wrote position deletes


def test_pyiceberg_reads_the_same_rows(users: str, icetide_settings: Settings) -> None:
    table = pyiceberg_catalog(icetide_settings).load_table(users)
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["score"]) for r in rows] == EXPECTED


def test_duckdb_path_applies_deletes(users: str, icetide_settings: Settings) -> None:
    result = run_duckdb(icetide_settings, f"SELECT * FROM {users} ORDER BY id")
    assert result.columns == ["id", "name", "score"]
    assert result.rows == EXPECTED
    qualified = run_duckdb(icetide_settings, "SELECT sum(score) FROM lake.rt.users")
    assert qualified.rows == [(121,)]


def test_metadata_summaries(users: str, icetide_settings: Settings) -> None:
    catalog = pyiceberg_catalog(icetide_settings)
    summary = {s.name: s for s in table_summaries(catalog)}[users]
    assert summary.rows == 4
    assert summary.snapshots == 4
    assert summary.format_version == 2
    info = describe(*load(catalog, f"lake.{users}"))
    assert [f["name"] for f in info["schema"]] == ["id", "name", "score"]
    assert info["schema"][0]["type"] == "long" and info["schema"][0]["required"]
    assert info["partition_spec"] == [{"name": "id_bucket", "transform": "bucket[4]",
                                       "source": "id"}]
    assert info["identifier_fields"] == ["id"]
    assert info["properties"]["write.merge.mode"] == "merge-on-read"
    newest = info["snapshots"][0]
    assert newest["operation"] == "append"
    assert newest["summary"]["icetide.offsets"] == "p0:7"
    assert len(info["snapshots"]) == 4
