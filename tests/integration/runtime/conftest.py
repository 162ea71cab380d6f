"""Fixtures of the runtime tests: a running metastore service registered in the session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import CatalogConfig, MetastoreConfig, Settings
from icetide.devkit.embedded.process import free_port
from icetide.runtime.metastore.service import ensure_metastore, stop_metastore
from tests.metastores import KEEP, register_catalog


def hive_settings(home: Path, name: str = "hms") -> Settings:
    return Settings(home=home, catalog=CatalogConfig(name=name, type="hive"),
                    metastore=MetastoreConfig(port=free_port()))


@pytest.fixture(scope="session")
def hms(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A running service, registered in the session as catalog ``hms`` (once: Spark keeps
    a catalog it has loaded, so its URI cannot change later)."""
    settings = hive_settings(tmp_path_factory.mktemp("hms-home"))
    KEEP.add(settings.metastore.port)
    ensure_metastore(settings)
    register_catalog(spark, settings)
    yield settings
    stop_metastore(settings)


