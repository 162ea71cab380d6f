"""``icetide catalog start|status|migrate|stop`` as a user runs them (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _icetide(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "ICETIDE_HOME": str(home), **env}
    return subprocess.run([sys.executable, "-m", "icetide.cli", *args], env=environ,
                          capture_output=True, text=True, timeout=300)


def _hadoop_lake(spark: SparkSession, warehouse: Path) -> None:
    spark.conf.set("spark.sql.catalog.clihadoop", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.clihadoop.type", "hadoop")
    spark.conf.set("spark.sql.catalog.clihadoop.warehouse", str(warehouse))
    spark.sql("CREATE TABLE clihadoop.shop.orders (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO clihadoop.shop.orders VALUES (1), (2), (3)")


def test_start_migrate_list_by_name_stop(spark: SparkSession, tmp_path: Path) -> None:
    home = tmp_path / "home"
    _hadoop_lake(spark, home / "warehouse")  # a lake made with the old default
    started = _icetide(home, "catalog", "start", "--format", "json")
    assert started.returncode == 0, started.stderr
    svc = json.loads(started.stdout)
    port = os.environ["ICETIDE_METASTORE__PORT"]
    assert (svc["type"], svc["uri"], svc["running"]) == ("hive", f"thrift://127.0.0.1:{port}",
                                                         True)
    moved = _icetide(home, "catalog", "migrate", "--format", "json")
    assert moved.returncode == 0, moved.stderr
    assert [(m["table"], m["outcome"]) for m in json.loads(moved.stdout)] == [
        ("shop.orders", "registered")]
    listed = _icetide(home, "tables", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    rows = {t["table"]: t["rows"] for t in json.loads(listed.stdout)}
    assert rows == {"shop.orders": 3}
    stopped = _icetide(home, "catalog", "stop")
    assert stopped.returncode == 0 and f"pid {svc['pid']}" in stopped.stdout
    status = _icetide(home, "catalog", "status", "--format", "json")
    assert json.loads(status.stdout)["running"] is False


def test_start_names_the_setting_when_the_catalog_is_not_embedded(tmp_path: Path) -> None:
    done = _icetide(tmp_path, "catalog", "start", ICETIDE_CATALOG__TYPE="hadoop")
    assert done.returncode != 0
    assert "catalog.type is 'hadoop'" in done.stderr and "ICETIDE_CATALOG__TYPE=hive" in done.stderr
