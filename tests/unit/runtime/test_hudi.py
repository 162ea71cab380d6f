"""Hudi's session settings and jars only for settings that ask for Hudi (spark.hudi)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import CatalogConfig, Settings, SparkConfig, load_settings
from icetide.errors import ConfigError
from icetide.runtime.catalogs import ICEBERG_EXTENSIONS
from icetide.runtime.hudi import HOODIE_CATALOG, HUDI_EXTENSIONS, KRYO, hudi_conf
from icetide.runtime.jars import load_spec, needed_groups
from icetide.runtime.session import spark_conf


def test_a_default_session_has_no_hudi_jar_nor_setting(tmp_path: Path) -> None:
    plain = Settings(home=tmp_path)
    assert "hudi" not in needed_groups(plain)
    conf = spark_conf(plain, [])
    assert conf["spark.sql.extensions"] == ICEBERG_EXTENSIONS
    assert "spark.serializer" not in conf
    assert "spark.sql.catalog.spark_catalog" not in conf
    assert hudi_conf(plain) == {}


def test_spark_hudi_adds_the_bundle_and_hudis_settings_beside_iceberg(tmp_path: Path) -> None:
    hudi = Settings(home=tmp_path, spark=SparkConfig(hudi=True))
    assert needed_groups(hudi)[-1] == "hudi"
    assert load_spec().groups["hudi"].coordinates == (
        "org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0",)
    conf = spark_conf(hudi, [])
    assert conf["spark.sql.extensions"] == f"{ICEBERG_EXTENSIONS},{HUDI_EXTENSIONS}"
    assert conf["spark.serializer"] == KRYO
    assert conf["spark.sql.catalog.spark_catalog"] == HOODIE_CATALOG
    assert conf["spark.sql.defaultCatalog"] == "lake"  # Iceberg keeps its own name


def test_the_env_overlay_turns_hudi_on(tmp_path: Path) -> None:
    settings = load_settings(None, environ={"ICETIDE_HOME": str(tmp_path),
                                            "ICETIDE_SPARK__HUDI": "true"})
    assert settings.spark.hudi
    assert "hudi" in needed_groups(settings)


def test_an_iceberg_catalog_named_spark_catalog_is_refused_with_hudi(tmp_path: Path) -> None:
    clash = Settings(home=tmp_path, spark=SparkConfig(hudi=True),
                     catalog=CatalogConfig(name="spark_catalog", type="hadoop"))
    with pytest.raises(ConfigError, match=r"catalog\.name 'spark_catalog'.*catalog\.name: lake"):
        hudi_conf(clash)
