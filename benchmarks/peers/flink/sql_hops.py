"""Seed 001's two other Flink jobs, as the peer runs them: the streaming statistic and CDC.

* **GROUP BY** (the seed's "使用 FlinkSQL 实时统计"): ``select productId, name,
  product_price, count(uid) … group by productId, name, product_price`` over the peer's own
  ``ods_behavior.clickevent`` read as a stream (``'streaming'='true', 'monitor-interval'=
  '1s'``: the Iceberg source plans the snapshots committed since its last look every
  second). The seed shows the result in the SQL client; here it goes into an Iceberg table
  keyed by ``productId`` (format v2, upsert), so it has commits to time and rows to check.
  The key is ``productId`` alone: Flink and Iceberg refuse a nullable key column, and
  ``name``/``product_price`` are null for a product the lookup does not find. In this
  benchmark a product's name and price never change, so ``productId`` determines the
  group; ``table.exec.sink.upsert-materialize`` is ``NONE`` so that Flink does not keep a
  second copy of every row in state for a key change that cannot happen.
* **CDC** (the seed's step "创建 user_member Iceberg 表"): ``mysql-cdc`` reads MariaDB's
  ``user_db.user_member`` (a snapshot, then the binlog) into an Iceberg upsert table with
  the same primary key (format v2; the seed's metadata clean-up properties), one
  checkpoint (= one commit) every 10 s as the seed's ``SET execution.checkpointing.interval
  = 10s``. The member column is ``memberLevel``, the seed's MySQL DDL's spelling (its Flink
  DDL's ``member_level`` does not exist in that table).

Everything here is plain data, like :mod:`.sql`: ``job.py`` runs the statements.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.peers.flink.sql import (
    CATALOG,
    DATABASE,
    TABLE,
    JobSpec,
    catalog_ddl,
    flink_config,
    with_options,
)

#: the statistic's table in the peer's warehouse (icetide's: ``dws.product_clicks``)
STATS_DATABASE = "dws"
STATS_TABLE = "product_clicks"
#: (productId, name, product_price, views): the seed's select list, its count named
STATS_COLUMNS = ("productId", "name", "product_price", "views")
#: the CDC table in the peer's warehouse, named as icetide's ``dim_db.user_member``
MEMBERS_DATABASE = "dim_db"
MEMBERS_TABLE = "user_member"
MEMBER_COLUMNS = ("userid", "name", "show_params", "memberLevel", "update_time")
CDC_SOURCE = "user_member_cdc"
#: read options of the seed's hint, and the starting strategy its source uses by default
#: (a scan of the table as it is, then every snapshot after it), spelled out
STREAM_HINT = {"streaming": "true", "monitor-interval": "1s",
               "starting-strategy": "TABLE_SCAN_THEN_INCREMENTAL"}


@dataclass(frozen=True)
class HopOptions:
    """Where a hop's job writes, how often it commits, how wide it runs."""

    warehouse: str  # the peer's own Iceberg warehouse (hadoop catalog), shared by its jobs
    checkpoint_s: float
    parallelism: int = 2


@dataclass(frozen=True)
class CdcOptions:
    """The business database the CDC job follows (the user icetide's source uses)."""

    host: str
    port: int
    user: str
    password: str
    database: str = "user_db"
    #: one server id per parallel snapshot reader (the binlog is read by one of them)
    server_ids: str = "5401-5416"


def _hint(options: dict[str, str]) -> str:
    pairs = ", ".join(f"'{k}'='{v}'" for k, v in options.items())
    return f"/*+ OPTIONS({pairs}) */"


def stats_sink_ddl() -> str:
    """The statistic's table: one row per product, upserted by ``productId``."""
    return (f"CREATE TABLE IF NOT EXISTS {CATALOG}.{STATS_DATABASE}.{STATS_TABLE} (\n"
            "  productId STRING, name STRING, product_price DECIMAL(10, 4), `views` BIGINT,\n"
            "  PRIMARY KEY (productId) NOT ENFORCED\n) " + with_options({
                "format-version": "2", "write.format.default": "parquet",
                "write.upsert.enabled": "true"}))


def stats_insert_sql() -> str:
    """The seed's statistic over the ODS table read as a stream."""
    return (f"INSERT INTO {CATALOG}.{STATS_DATABASE}.{STATS_TABLE}\n"
            "SELECT productId, name, product_price, COUNT(uid) AS `views`\n"
            f"FROM {CATALOG}.{DATABASE}.{TABLE} {_hint(STREAM_HINT)}\n"
            "GROUP BY productId, name, product_price")


def groupby_spec(o: HopOptions, jars: list[str]) -> JobSpec:
    """The GROUP BY job for ``job.py``."""
    config = flink_config(o.checkpoint_s, o.parallelism)
    config["table.exec.sink.upsert-materialize"] = "NONE"
    return JobSpec(config=config, jars=jars, statements=[
        catalog_ddl(o.warehouse), f"CREATE DATABASE IF NOT EXISTS {CATALOG}.{STATS_DATABASE}",
        stats_sink_ddl(), stats_insert_sql()])


MEMBER_SCHEMA = ("  userid STRING, name STRING, show_params STRING, memberLevel INT,\n"
                 "  update_time TIMESTAMP(3),\n  PRIMARY KEY (userid) NOT ENFORCED\n) ")


def cdc_source_ddl(c: CdcOptions) -> str:
    """``user_db.user_member`` by ``mysql-cdc``: snapshot, then binlog (times in UTC).

    The backfill is skipped. A snapshot chunk is read between a low and a high binlog
    watermark, then the binlog is read until it passes the high one, and only then is
    the chunk emitted; on the benchmark's idle database the two watermarks sit at one
    position, and when they were taken in different seconds the chunk waited for a
    change of this table that never came (writes to another table did not release it),
    so the job never committed its snapshot. Without the backfill, Flink CDC documents,
    changes made during the snapshot are replayed from the binlog after it (at least
    once); into a table upserted by key, as this one is, a replayed change writes the
    same row again, so the table ends the same. An idle database has nothing to backfill
    anyway."""
    return f"CREATE TEMPORARY TABLE {CDC_SOURCE} (\n" + MEMBER_SCHEMA + with_options({
        "connector": "mysql-cdc", "hostname": c.host, "port": str(c.port),
        "username": c.user, "password": c.password, "database-name": c.database,
        "table-name": MEMBERS_TABLE, "server-id": c.server_ids,
        "server-time-zone": "UTC", "scan.startup.mode": "initial",
        "scan.incremental.snapshot.backfill.skip": "true"})


def members_sink_ddl() -> str:
    """The seed's ``user_member_sink``: primary key, format v2, old metadata removed;
    upsert, for the replayed changes of :func:`cdc_source_ddl`."""
    return (f"CREATE TABLE IF NOT EXISTS {CATALOG}.{MEMBERS_DATABASE}.{MEMBERS_TABLE} (\n"
            + MEMBER_SCHEMA + with_options({
                "format-version": "2", "write.format.default": "parquet",
                "write.metadata.delete-after-commit.enabled": "true",
                "write.metadata.previous-versions-max": "5",
                # an insert the binlog replays after the snapshot (no backfill) replaces
                # the row instead of adding a second one with the same key
                "write.upsert.enabled": "true"}))


def cdc_spec(o: HopOptions, c: CdcOptions, jars: list[str]) -> JobSpec:
    """The CDC job for ``job.py``: ``insert into … select * from`` the CDC table."""
    return JobSpec(config=flink_config(o.checkpoint_s, o.parallelism), jars=jars, statements=[
        cdc_source_ddl(c), catalog_ddl(o.warehouse),
        f"CREATE DATABASE IF NOT EXISTS {CATALOG}.{MEMBERS_DATABASE}", members_sink_ddl(),
        f"INSERT INTO {CATALOG}.{MEMBERS_DATABASE}.{MEMBERS_TABLE} SELECT * FROM {CDC_SOURCE}"])
