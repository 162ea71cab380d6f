"""Trino reads the lake as the seed does: `trino-cli --catalog iceberg`, through the one
Hive Metastore, every table by name, row for row what Spark reads.

The lake: the demo's (fixture ``demo_lake``: `icetide demo --duration 60`, the clickstream
example with its dimensions by CDC from MariaDB while business changes run — prices,
member levels, members joining and leaving: updates and deletes — every layer, and
maintenance as the flows commit), so the merge-on-read primary-key tables carry delete
files. Trino (476, Maven Central, started once for the module with `icetide trino start`,
on loopback) reads it through `icetide catalog`'s thrift URI.

Asserted: Trino lists every table Spark lists; each table is equal row for row (as
multisets) in Trino and in Spark; the seed's `select * from ods_behavior.clickevent limit
100` gives 100 of Spark's rows and the seed's GROUP BY gives Spark's groups; `icetide
sql --engine trino` and `icetide trino status|stop` work from the command line; the running
Trino sees each new commit at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession

from icetide.config import Settings, load_settings
from icetide.devkit.embedded.process import free_port
from icetide.query.trino_sql import run_trino
from icetide.runtime.trino import dist
from tests.e2e.demo_lake import DemoLake

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(1800)]  # a hang guard, not a budget

#: Primary-key tables the demo updates and deletes in (merge-on-read: delete files).
MERGE_ON_READ = ("dim_db.products", "dim_db.user_member", "dws.product_user",
                 "dws.product_views", "dws.user_activity", "dws.user_profile")
SEED_LIMIT = "select * from ods_behavior.clickevent limit 100"
SEED_GROUP_BY = ("SELECT productId, name, product_price, count(*) AS views "
                 "FROM ods_behavior.clickevent GROUP BY productId, name, product_price")


@dataclass(frozen=True)
class TrinoLake:
    settings: Settings
    env: dict[str, str]
    spark: SparkSession
    cat: str  # the lake's catalog in the test session's Spark


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "icetide.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def lake(demo_lake: DemoLake, spark: SparkSession) -> Iterator[TrinoLake]:
    """The demo's lake (tests.e2e.demo_lake), and Trino started on it for the module."""
    env = {**demo_lake.env(), "ICETIDE_TRINO__PORT": str(free_port())}
    settings = load_settings(None, environ=env)  # what the module's icetide commands see
    assert dist.installed(settings) is not None, (
        f"Trino {dist.VERSION} is not in the jar cache: run `make install-test` (the tests "
        "never download it)")
    try:
        started = _cli(env, "trino", "start")
        assert started.returncode == 0, started.stderr[-3000:]
        yield TrinoLake(settings, env, spark,
                        _spark_catalog(spark, demo_lake.metastore_port, demo_lake.home))
        stopped = _cli(env, "trino", "stop")
        assert stopped.returncode == 0 and "stopped Trino" in stopped.stdout, stopped
    finally:
        _cli(env, "trino", "stop")


def _spark_catalog(spark: SparkSession, port: int, home: Path) -> str:
    cat = "trino_e2e"
    spark.conf.set(f"spark.sql.catalog.{cat}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{cat}.type", "hive")
    spark.conf.set(f"spark.sql.catalog.{cat}.uri", f"thrift://127.0.0.1:{port}")
    spark.conf.set(f"spark.sql.catalog.{cat}.warehouse", str(home / "warehouse"))
    spark.conf.set(f"spark.sql.catalog.{cat}.cache-enabled", "false")
    return cat


def _spark_tables(lake: TrinoLake) -> list[str]:
    names = []
    for ns in lake.spark.sql(f"SHOW NAMESPACES IN {lake.cat}").collect():
        tables = lake.spark.sql(f"SHOW TABLES IN {lake.cat}.{ns[0]}").collect()
        names += [f"{ns[0]}.{t.tableName}" for t in tables]
    return sorted(names)


def _norm(value: Any) -> Any:
    """One engine-neutral form: UTC instants, bytes, hashable containers."""
    if isinstance(value, Row):
        value = value.asDict()
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    return value


def _spark_rows(lake: TrinoLake, sql: str) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    df = lake.spark.sql(sql)
    return [c.lower() for c in df.columns], Counter(_norm(tuple(r)) for r in df.collect())


def _trino_rows(lake: TrinoLake, sql: str) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    result = run_trino(lake.settings, sql)
    return [c.lower() for c in result.columns], Counter(_norm(r) for r in result.rows)


def test_trino_lists_every_table_spark_lists(lake: TrinoLake) -> None:
    spark_tables = _spark_tables(lake)
    assert {"ods_behavior.clickevent", "dim_db.user_member", "dim_db.products",
            "dwd.click_wide", "ads.daily_product_report"} <= set(spark_tables)
    rows = run_trino(lake.settings, "SELECT table_schema || '.' || table_name FROM "
                     "information_schema.tables "
                     "WHERE table_schema NOT IN ('information_schema', 'system')")
    # the metastore is shared: Trino's Iceberg catalog also lists the demo's Hudi twin
    # (user_member_hudi and its _ro/_rt views), which it cannot read (docs/connect.md)
    iceberg = [r[0] for r in rows.rows if not r[0].startswith("dim_db.user_member_hudi")]
    assert sorted(iceberg) == [t.lower() for t in spark_tables]


def _partition_fields(lake: TrinoLake, table: str) -> list[str]:
    schema = lake.spark.table(f"{lake.cat}.{table}.partitions").schema
    return list(schema["partition"].dataType.fieldNames())  # type: ignore[attr-defined]


def test_the_lake_has_partitions_buckets_and_delete_files(lake: TrinoLake) -> None:
    """The comparison below covers what icetide writes: day-partitioned append tables,
    bucketed merge-on-read primary-key tables, and their delete files (maintenance may
    have compacted some table's deletes away, not those of every such table)."""
    assert _partition_fields(lake, "ods_behavior.clickevent") == ["eventTime_day"]
    assert _partition_fields(lake, "dim_db.user_member") == ["userid_bucket"]
    deletes = {t: lake.spark.sql(f"SELECT count(*) FROM {lake.cat}.{t}.delete_files")
               .collect()[0][0] for t in MERGE_ON_READ}
    print(f"\ndelete files: {deletes}")
    assert any(deletes.values()), deletes


def test_every_table_equals_spark_row_for_row(lake: TrinoLake) -> None:
    checked = []
    for table in _spark_tables(lake):
        spark_cols, spark_rows = _spark_rows(lake, f"SELECT * FROM {lake.cat}.{table}")
        trino_cols, trino_rows = _trino_rows(lake, f"SELECT * FROM {table}")
        assert trino_cols == spark_cols, table
        assert trino_rows == spark_rows, (
            f"{table}: only in Trino {list((trino_rows - spark_rows).items())[:3]}, "
            f"only in Spark {list((spark_rows - trino_rows).items())[:3]}")
        checked.append((table, sum(spark_rows.values())))
    print("\n" + "\n".join(f"{t}: {n} rows equal" for t, n in checked))
    assert dict(checked)["ods_behavior.clickevent"] > 2500


def test_the_seeds_queries(lake: TrinoLake) -> None:
    _, every = _spark_rows(lake, f"SELECT * FROM {lake.cat}.ods_behavior.clickevent")
    _, limited = _trino_rows(lake, SEED_LIMIT)
    assert sum(limited.values()) == 100 and not limited - every
    _, spark_groups = _spark_rows(lake, SEED_GROUP_BY.replace(
        "FROM ods_behavior", f"FROM {lake.cat}.ods_behavior"))
    _, trino_groups = _trino_rows(lake, SEED_GROUP_BY)
    assert trino_groups == spark_groups and len(spark_groups) > 1


def test_the_command_line(lake: TrinoLake) -> None:
    status = _cli(lake.env, "trino", "status", "--format", "json")
    assert status.returncode == 0, status.stderr
    svc = json.loads(status.stdout)
    assert svc["running"] and svc["uri"] == f"http://127.0.0.1:{lake.settings.trino.port}"
    done = _cli(lake.env, "sql", "--engine", "trino", "--format", "json",
                "SELECT count(*) AS n FROM dim_db.products")
    assert done.returncode == 0, done.stderr
    n = lake.spark.table(f"{lake.cat}.dim_db.products").count()
    assert json.loads(done.stdout) == [{"n": n}]
    bad = _cli(lake.env, "sql", "--engine", "trino", "SELECT * FROM dim_db.nope")
    assert bad.returncode == 1 and "TABLE_NOT_FOUND" in bad.stderr
    refused = _cli(lake.env, "sql", "--engine", "trino",
                   "DELETE FROM dim_db.products WHERE productId = '1'")
    assert refused.returncode == 1 and "Access Denied" in refused.stderr


def test_trino_sees_each_new_commit(lake: TrinoLake) -> None:
    """No stale reads: a commit is visible to the running Trino at once (no caches to
    expire), as `icetide sql --engine trino` users expect of a near-real-time lake."""
    table = f"{lake.cat}.trino_fresh.t"
    lake.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lake.cat}.trino_fresh")
    lake.spark.sql(f"CREATE TABLE {table} (id INT) USING iceberg")
    try:
        for n in (1, 2, 3):
            lake.spark.sql(f"INSERT INTO {table} VALUES ({n})")
            seen = run_trino(lake.settings, "SELECT count(*), max(id) FROM trino_fresh.t")
            assert seen.rows == [(n, n)]
    finally:
        lake.spark.sql(f"DROP TABLE {table} PURGE")
        lake.spark.sql(f"DROP NAMESPACE {lake.cat}.trino_fresh")
