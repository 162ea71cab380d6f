"""``catalog.type: glue`` as configuration (no AWS here, nothing mocked): the Spark conf of
Iceberg's GlueCatalog, pyiceberg's Glue properties, the jars it loads, and what is refused
(a uri, a warehouse off S3, Hudi) or does not apply (icetide's metastore commands)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from icetide.app.catalog import start_service, stop_service
from icetide.cli.main import cli
from icetide.config import CatalogConfig, S3Config, Settings, SparkConfig, load_settings
from icetide.errors import ConfigError
from icetide.runtime.catalogs import GLUE_CATALOG, catalog_conf, pyiceberg_properties
from icetide.runtime.hudi import hudi_conf
from icetide.runtime.jars import load_spec, needed_groups
from icetide.runtime.s3 import S3_FILE_IO
from icetide.runtime.session import spark_conf

P = "spark.sql.catalog.lake"
WAREHOUSE = "s3://seed-002-lake/warehouse"


def _glue(tmp_path: Path, **catalog: object) -> Settings:
    return Settings(home=tmp_path, s3=S3Config(region="eu-west-1"),
                    catalog=CatalogConfig.model_validate(
                        {"type": "glue", "warehouse": WAREHOUSE, **catalog}))


def test_spark_gets_icebergs_glue_catalog_with_s3fileio(tmp_path: Path) -> None:
    conf = spark_conf(_glue(tmp_path), [])
    assert conf[P] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf[f"{P}.catalog-impl"] == GLUE_CATALOG == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert conf[f"{P}.io-impl"] == S3_FILE_IO == "org.apache.iceberg.aws.s3.S3FileIO"
    assert conf[f"{P}.warehouse"] == WAREHOUSE
    assert conf[f"{P}.client.region"] == "eu-west-1"
    assert f"{P}.type" not in conf  # Iceberg refuses type and catalog-impl together
    assert f"{P}.uri" not in conf
    assert conf["spark.sql.defaultCatalog"] == "lake"
    assert conf["spark.sql.catalogImplementation"] == "in-memory"  # no metastore of ours


def test_it_loads_the_iceberg_aws_bundle(tmp_path: Path) -> None:
    assert "aws" in needed_groups(_glue(tmp_path))
    assert load_spec().groups["aws"].coordinates == (
        "org.apache.iceberg:iceberg-aws-bundle:1.12.0",)


def test_pyiceberg_reads_the_same_catalog_through_its_own_glue_catalog(tmp_path: Path) -> None:
    props = pyiceberg_properties(_glue(tmp_path, properties={"glue.id": "123456789012"}))
    assert props["type"] == "glue" and "catalog-impl" not in props
    assert (props["glue.region"], props["warehouse"], props["glue.id"]) == (
        "eu-west-1", WAREHOUSE, "123456789012")


def test_the_env_overlay_selects_glue(tmp_path: Path) -> None:
    settings = load_settings(None, environ={"ICETIDE_HOME": str(tmp_path),
                                            "ICETIDE_CATALOG__TYPE": "glue",
                                            "ICETIDE_CATALOG__WAREHOUSE": WAREHOUSE})
    assert catalog_conf(settings)[f"{P}.catalog-impl"] == GLUE_CATALOG


def test_a_uri_or_a_warehouse_off_s3_is_refused_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"catalog.uri 'thrift://x:9083' means nothing for a "
                                          r"glue catalog.*remove it"):
        catalog_conf(_glue(tmp_path, uri="thrift://x:9083"))
    with pytest.raises(ConfigError, match=r"s3:// warehouse, not '/data/wh'.*catalog.warehouse"):
        catalog_conf(_glue(tmp_path, warehouse="/data/wh"))


def test_hudi_beside_glue_is_refused_naming_the_missing_jar(tmp_path: Path) -> None:
    settings = _glue(tmp_path).model_copy(update={"spark": SparkConfig(hudi=True)})
    with pytest.raises(ConfigError, match=r"catalog.type glue.*AwsGlueCatalogSyncTool.*"
                                          r"hudi-aws-bundle.*does not resolve.*1\.2\.0"):
        hudi_conf(settings)


def test_icetides_metastore_commands_say_they_do_not_apply(tmp_path: Path) -> None:
    for verb, command in (("start", start_service), ("stop", stop_service)):
        with pytest.raises(ConfigError, match=rf"'glue': there is no icetide metastore to "
                                              rf"{verb} \(AWS Glue is the catalog service"):
            command(_glue(tmp_path))
    env = {"ICETIDE_HOME": str(tmp_path), "ICETIDE_CATALOG__TYPE": "glue",
           "ICETIDE_CATALOG__WAREHOUSE": WAREHOUSE}
    shown = CliRunner().invoke(cli, ["catalog", "status"], env=env)
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith(f"catalog 'lake': glue, warehouse {WAREHOUSE}: AWS Glue is "
                                   "the catalog service (configuration only, untested here")
    started = CliRunner().invoke(cli, ["catalog", "start"], env=env)
    assert isinstance(started.exception, ConfigError)  # printed by the entry point
    assert "no icetide metastore to start (AWS Glue" in str(started.exception)
