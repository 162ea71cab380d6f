"""A writer killed while holding a table's commit lock blocks it only until the lock expires."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hive_metastore.ttypes import LockComponent, LockLevel, LockRequest, LockState, LockType
from pyiceberg.catalog.hive import HiveCatalog
from pyspark.sql import SparkSession

from icetide.config import CatalogConfig, MetastoreConfig, Settings
from icetide.devkit.embedded.process import free_port
from icetide.runtime.metastore.service import ensure_metastore, stop_metastore
from tests.metastores import register_catalog

pytestmark = pytest.mark.spark
LOCK_TIMEOUT = 4.0


@pytest.fixture
def quick_locks(spark: SparkSession, tmp_path: Path) -> Iterator[Settings]:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(name="hmslock", type="hive"),
                        metastore=MetastoreConfig(port=free_port(), lock_timeout=LOCK_TIMEOUT))
    ensure_metastore(settings)
    register_catalog(spark, settings)
    yield settings
    stop_metastore(settings)


def _ghost_lock(uri: str, db: str, table: str) -> None:
    """Take the table's exclusive lock and never heartbeat or release it (a kill -9)."""
    with HiveCatalog("ghost", uri=uri)._client as client:
        component = LockComponent(level=LockLevel.TABLE, type=LockType.EXCLUSIVE,
                                  dbname=db, tablename=table)
        response = client.lock(LockRequest(component=[component], user="ghost",
                                           hostname=socket.gethostname()))
        assert response.state == LockState.ACQUIRED


def test_a_dead_writers_lock_expires(spark: SparkSession, quick_locks: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS hmslock.db")
    spark.sql("CREATE TABLE hmslock.db.t (id BIGINT) USING iceberg")
    _ghost_lock(f"thrift://127.0.0.1:{quick_locks.metastore.port}", "db", "t")
    started = time.monotonic()
    spark.sql("INSERT INTO hmslock.db.t VALUES (1)")  # waits for the lock, then commits
    waited = time.monotonic() - started
    assert spark.sql("SELECT count(*) FROM hmslock.db.t").collect()[0][0] == 1
    assert waited < LOCK_TIMEOUT * 2 + 30, waited  # expired in time, not Iceberg's 3 min
