"""Trino reads the lake as the seed does: `trino-cli --catalog iceberg`, through the one
Hive Metastore, every table by name, row for row what Spark reads.

The lake: `icetide run examples/clickstream --once --conf clickstream.dims=cdc` against a
real broker and a private MariaDB (the seed's `user_db`), then business changes in MariaDB
(prices, member levels, members joining and leaving: updates and deletes) and more
clicks, then a second `--once` — so the merge-on-read primary-key tables carry delete
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
import os
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

from icetide.config import MetastoreConfig, Settings, TrinoConfig
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.business import BusinessOptions, run_business_updates
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.query.trino_sql import run_trino
from icetide.runtime.metastore.service import stop_metastore
from icetide.runtime.trino import dist
from tests.e2e.pipeline_proc import drain, pipeline_env
from tests.metastores import KEEP

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(1800)]  # a hang guard, not a budget

SEED_LIMIT = "select * from ods_behavior.clickevent limit 100"
SEED_GROUP_BY = ("SELECT productId, name, product_price, count(*) AS views "
                 "FROM ods_behavior.clickevent GROUP BY productId, name, product_price")
CDC = ("--conf", "clickstream.dims=cdc")


@dataclass(frozen=True)
class TrinoLake:
    settings: Settings
    env: dict[str, str]
    spark: SparkSession
    cat: str  # the lake's catalog in the test session's Spark


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "icetide.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _build_lake(env: dict[str, str], shop: MariaDBInfo, bootstrap: str) -> None:
    """Clicks and the seed's dimensions by CDC, then updates and deletes, then more."""
    produce_clicks(bootstrap, "clicktopic", GenOptions(count=2000, bad_ratio=0.02, seed=7))
    drain(env, *CDC)
    changes = run_business_updates(lambda: shop.connect("app"),
                                   BusinessOptions(rate=1000.0, count=80, seed=11))
    assert changes.counts["delete"] and changes.counts["price"], dict(changes.counts)
    produce_clicks(bootstrap, "clicktopic", GenOptions(count=1000, bad_ratio=0.02, seed=8))
    drain(env, *CDC)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Iterator[TrinoLake]:
    tmp = tmp_path_factory.mktemp("trino")
    home, ms_port = tmp / "home", free_port()
    settings = Settings(home=home, metastore=MetastoreConfig(port=ms_port),
                        trino=TrinoConfig(port=free_port()))
    assert dist.installed(settings) is not None, (
        f"Trino {dist.VERSION} is not in the jar cache: run `make install-test` (the tests "
        "never download it)")
    KEEP.add(ms_port)  # the lake's metastore serves every test of this module
    try:
        with EmbeddedMariaDB(tmp / "mariadb") as shop, \
                EmbeddedBroker(None, tmp / "broker") as broker:
            conn = shop.connect()
            try:
                seed_shop(conn, "user_db")
            finally:
                conn.close()
            env = pipeline_env(home, broker.bootstrap, shop)
            env.update({"ICETIDE_METASTORE__PORT": str(ms_port),
                        "ICETIDE_TRINO__PORT": str(settings.trino.port)})
            _build_lake(env, shop, broker.bootstrap)
        started = _cli(env, "trino", "start")
        assert started.returncode == 0, started.stderr[-3000:]
        yield TrinoLake(settings, env, spark, _spark_catalog(spark, ms_port, home))
        stopped = _cli(env, "trino", "stop")
        assert stopped.returncode == 0 and "stopped Trino" in stopped.stdout, stopped
    finally:
        _cli(os.environ | {"ICETIDE_HOME": str(home), "ICETIDE_TRINO__PORT":
                           str(settings.trino.port)}, "trino", "stop")
        stop_metastore(settings)
        KEEP.discard(ms_port)


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
    assert sorted(r[0] for r in rows.rows) == [t.lower() for t in spark_tables]


def _partition_fields(lake: TrinoLake, table: str) -> list[str]:
    schema = lake.spark.table(f"{lake.cat}.{table}.partitions").schema
    return list(schema["partition"].dataType.fieldNames())  # type: ignore[attr-defined]


def test_the_lake_has_partitions_buckets_and_delete_files(lake: TrinoLake) -> None:
    """The comparison below covers what icetide writes: day-partitioned append tables,
    bucketed merge-on-read primary-key tables, and their delete files."""
    assert _partition_fields(lake, "ods_behavior.clickevent") == ["eventTime_day"]
    assert _partition_fields(lake, "dim_db.user_member") == ["userid_bucket"]
    found = lake.spark.sql(
        f"SELECT count(*) FROM {lake.cat}.dim_db.user_member.delete_files").collect()[0][0]
    assert found > 0


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
