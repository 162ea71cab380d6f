"""Settings → Spark catalog conf and pyiceberg catalog, for every catalog type (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from icetide.config import CatalogConfig, Settings, SparkConfig, load_settings
from icetide.errors import ConfigError
from icetide.runtime.catalogs import (
    ICEBERG_EXTENSIONS,
    catalog_conf,
    prepare_warehouse,
    pyiceberg_catalog,
    sqlalchemy_url,
)
from icetide.runtime.hadoop_tables import HadoopDirCatalog
from icetide.runtime.session import jvm_bytes, page_size, redacted, spark_conf

P = "spark.sql.catalog.lake"


def _settings(tmp_path: Path, **catalog: object) -> Settings:
    return Settings(home=tmp_path, catalog=CatalogConfig.model_validate(catalog))


def test_the_default_is_the_embedded_metastore_with_the_home_warehouse(tmp_path: Path) -> None:
    conf = catalog_conf(Settings(home=tmp_path))
    assert conf[f"{P}.type"] == "hive"
    assert conf[f"{P}.uri"] == "thrift://127.0.0.1:9083"
    assert conf[f"{P}.warehouse"] == str((tmp_path / "warehouse").resolve())
    assert conf["spark.hadoop.iceberg.hive.lock-heartbeat-interval-ms"] == "10000"


def test_hadoop_uses_home_warehouse(tmp_path: Path) -> None:
    conf = catalog_conf(_settings(tmp_path, type="hadoop"))
    assert conf["spark.sql.extensions"] == ICEBERG_EXTENSIONS
    assert conf["spark.sql.defaultCatalog"] == "lake"
    assert conf[P] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf[f"{P}.type"] == "hadoop"
    assert conf[f"{P}.warehouse"] == str((tmp_path / "warehouse").resolve())
    assert conf[f"{P}.cache-enabled"] == "false"
    assert conf["spark.sql.sources.v2.bucketing.enabled"] == "true"
    assert conf["spark.sql.iceberg.planning.preserve-data-grouping"] == "true"
    assert f"{P}.uri" not in conf


def test_hadoop_rejects_a_uri(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"catalog.uri 'thrift://x:1'.*remove it"):
        catalog_conf(_settings(tmp_path, type="hadoop", uri="thrift://x:1"))


def test_jdbc_conf_has_credentials_schema_version_and_warehouse(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, name="shared", type="jdbc", uri="jdbc:postgresql://db:5432/lake",
        user="ice", password=SecretStr("s3cr:t"), warehouse="/data/wh",
    )
    conf = catalog_conf(settings)
    p = "spark.sql.catalog.shared"
    assert conf["spark.sql.defaultCatalog"] == "shared"
    assert conf[f"{p}.type"] == "jdbc"
    assert conf[f"{p}.uri"] == "jdbc:postgresql://db:5432/lake"
    assert conf[f"{p}.jdbc.user"] == "ice"
    assert conf[f"{p}.jdbc.password"] == "s3cr:t"
    assert conf[f"{p}.jdbc.schema-version"] == "V1"
    assert conf[f"{p}.warehouse"] == "/data/wh"
    assert conf[f"{p}.cache-enabled"] == "false"
    assert "s3cr" not in str(redacted(conf))


def test_jdbc_password_comes_from_the_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("catalog:\n  type: jdbc\n  uri: jdbc:postgresql://h:1/d\n  user: u\n")
    settings = load_settings(cfg, environ={"ICETIDE_CATALOG__PASSWORD": "pw"})
    assert catalog_conf(settings)[f"{P}.jdbc.password"] == "pw"
    assert sqlalchemy_url(settings) == "postgresql+psycopg2://u:pw@h:1/d"


def test_jdbc_needs_a_postgres_uri(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"catalog.uri None .*ICETIDE_CATALOG__URI"):
        catalog_conf(_settings(tmp_path, type="jdbc"))
    with pytest.raises(ConfigError, match="jdbc:mysql://h/d"):
        catalog_conf(_settings(tmp_path, type="jdbc", uri="jdbc:mysql://h/d"))


def test_sqlalchemy_url_escapes_the_password(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, type="jdbc", uri="jdbc:postgresql://h:5/d", user="u", password=SecretStr("a@b/c")
    )
    assert sqlalchemy_url(settings) == "postgresql+psycopg2://u:a%40b%2Fc@h:5/d"


def test_rest_conf_with_token_or_credential(tmp_path: Path) -> None:
    token = catalog_conf(
        _settings(tmp_path, type="rest", uri="https://r/api", password=SecretStr("tok"))
    )
    assert token[f"{P}.type"] == "rest"
    assert token[f"{P}.uri"] == "https://r/api"
    assert token[f"{P}.token"] == "tok"
    assert f"{P}.warehouse" not in token  # the REST server owns the warehouse
    cred = catalog_conf(
        _settings(tmp_path, type="rest", uri="http://r", user="id", password=SecretStr("sec"),
                  warehouse="wh1")
    )
    assert cred[f"{P}.credential"] == "id:sec"
    assert cred[f"{P}.warehouse"] == "wh1"
    with pytest.raises(ConfigError, match=r"https://rest\.example\.com/api"):
        catalog_conf(_settings(tmp_path, type="rest", uri="thrift://x"))


def test_hive_conf_needs_thrift(tmp_path: Path) -> None:
    conf = catalog_conf(_settings(tmp_path, type="hive", uri="thrift://hms:9083"))
    assert conf[f"{P}.type"] == "hive"
    assert conf[f"{P}.uri"] == "thrift://hms:9083"
    with pytest.raises(ConfigError, match="thrift://metastore:9083"):
        catalog_conf(_settings(tmp_path, type="hive", uri="http://hms"))


def test_user_properties_come_last(tmp_path: Path) -> None:
    conf = catalog_conf(
        _settings(tmp_path, properties={"cache-enabled": "true", "io-impl": "x.FileIO"})
    )
    assert conf[f"{P}.cache-enabled"] == "true"
    assert conf[f"{P}.io-impl"] == "x.FileIO"


def test_spark_conf_puts_jars_on_both_paths_and_user_conf_last(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        spark=SparkConfig(master="spark://m:7077", driver_memory="3g", shuffle_partitions=8,
                          conf={"spark.ui.enabled": "true", "spark.sql.defaultCatalog": "x"}),
    )
    jars = [Path("/a/one.jar"), Path("/b/two.jar")]
    conf = spark_conf(settings, jars)
    assert conf["spark.master"] == "spark://m:7077"
    assert conf["spark.driver.memory"] == "3g"
    assert conf["spark.sql.shuffle.partitions"] == "8"
    assert conf["spark.jars"] == "/a/one.jar,/b/two.jar"
    assert conf["spark.driver.extraClassPath"] == "/a/one.jar:/b/two.jar"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.sql.catalogImplementation"] == "in-memory"
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.sql.defaultCatalog"] == "x"
    assert "spark.driver.bindAddress" not in conf  # only for local masters
    local = spark_conf(Settings(home=tmp_path), jars)
    assert local["spark.ui.enabled"] == "false"
    # local: the executor is the driver JVM, the class path holds the jars; nothing copied
    assert "spark.jars" not in local
    assert local["spark.driver.extraClassPath"] == "/a/one.jar:/b/two.jar"


def test_spark_conf_caches_enough_generated_classes_for_a_pipeline(tmp_path: Path) -> None:
    key = "spark.sql.codegen.cache.maxEntries"
    conf = spark_conf(Settings(home=tmp_path), [])
    assert int(conf[key]) >= 1000  # Spark's default: 100
    assert conf["spark.sql.ui.explainMode"] == "simple"  # Spark's: formatted
    mine = Settings(home=tmp_path, spark=SparkConfig(conf={key: "300"}))
    assert spark_conf(mine, [])[key] == "300"


def test_batch_caches_are_not_compressed_unless_the_user_says(tmp_path: Path) -> None:
    key = "spark.sql.inMemoryColumnarStorage.compressed"
    assert spark_conf(Settings(home=tmp_path), [])[key] == "false"  # Spark's: true
    mine = Settings(home=tmp_path, spark=SparkConfig(conf={key: "true"}))
    assert spark_conf(mine, [])[key] == "true"


def test_adaptive_execution_is_off_on_one_machine_only(tmp_path: Path) -> None:
    key = "spark.sql.adaptive.enabled"
    assert spark_conf(Settings(home=tmp_path), [])[key] == "false"  # local[*]
    cluster = SparkConfig(master="spark://10.0.0.5:7077", driver_host="10.0.0.1")
    assert key not in spark_conf(Settings(home=tmp_path, spark=cluster), [])
    mine = SparkConfig(conf={key: "true"})
    assert spark_conf(Settings(home=tmp_path, spark=mine), [])[key] == "true"


def test_pyiceberg_catalog_for_hadoop_reads_the_warehouse_directory(tmp_path: Path) -> None:
    catalog = pyiceberg_catalog(_settings(tmp_path, type="hadoop"))
    assert isinstance(catalog, HadoopDirCatalog)
    assert catalog.name == "lake"
    assert catalog.root == (tmp_path / "warehouse").resolve()
    assert catalog.list_namespaces() == []


def test_prepare_warehouse_creates_only_local_hadoop_dirs(tmp_path: Path) -> None:
    prepare_warehouse(_settings(tmp_path, type="hadoop"))
    assert (tmp_path / "warehouse").is_dir()
    prepare_warehouse(_settings(tmp_path, warehouse=f"file://{tmp_path}/wh2"))
    assert (tmp_path / "wh2").is_dir()
    prepare_warehouse(_settings(tmp_path, type="jdbc", uri="jdbc:postgresql://h/d",
                                warehouse=str(tmp_path / "not-created")))
    assert not (tmp_path / "not-created").exists()


def test_memory_pages_stay_small_on_one_machine(tmp_path: Path) -> None:
    key = "spark.buffer.pageSize"
    assert spark_conf(Settings(home=tmp_path), [])[key] == "256k"  # 2g driver
    big = SparkConfig(driver_memory="4096m")
    assert spark_conf(Settings(home=tmp_path, spark=big), [])[key] == "512k"
    via_conf = SparkConfig(conf={"spark.driver.memory": "8g"})
    assert spark_conf(Settings(home=tmp_path, spark=via_conf), [])[key] == "1024k"
    cluster = SparkConfig(master="spark://10.0.0.5:7077", driver_host="10.0.0.1")
    assert key not in spark_conf(Settings(home=tmp_path, spark=cluster), [])
    mine = SparkConfig(conf={key: "4m"})
    assert spark_conf(Settings(home=tmp_path, spark=mine), [])[key] == "4m"


@pytest.mark.parametrize(("size", "expected"), [
    ("2g", 2 << 30), ("4096m", 4 << 30), ("512k", 512 << 10), ("1G", 1 << 30),
    ("100", 100), ("lots", None), ("2.5g", None)])
def test_jvm_bytes(size: str, expected: int | None) -> None:
    assert jvm_bytes(size) == expected


def test_page_size_is_below_half_a_g1_region_and_fills_the_page_table() -> None:
    for heap in (512 << 20, 1 << 30, 3 << 30, 4 << 30, 24 << 30):
        page = page_size(heap)
        region = 1 << ((heap // 2048).bit_length() - 1)  # G1's region: heap/2048, 1-32 MiB
        assert page < max(1 << 20, min(region, 32 << 20)) // 2
        assert page * 8192 > 0.6 * heap  # the execution pool never fills the page table
    assert page_size(64 << 20) == 64 * 1024  # the floor
