"""The peer's Flink SQL job: seed 001's ``Kafka2Iceberg`` with icetide's ODS cleaning.

Seed 001 reads the click topic as JSON, looks products up in MySQL ``FOR SYSTEM_TIME AS
OF`` the processing time (JDBC, cached) and inserts into an Iceberg table partitioned by a
day string, checkpointing every few seconds (each checkpoint is an Iceberg commit). The
peer does the same, with what ``examples/clickstream/clickevent.py`` cleans: a record that
is not JSON is dropped by the JSON format (``json.ignore-parse-errors``), one without
``uid``, ``productId`` or ``updateTime`` by the ``WHERE``, and so is one with a field of the
wrong type: the format sets such a field to null and keeps the row, so the optional integer
fields are read as strings and a row whose value does not cast (``TRY_CAST``) is dropped,
as icetide dead-letters it. ``eventTime`` is the event's ``updateTime`` and ``dt`` its UTC
day (icetide's ODS partitions by ``days(eventTime)``; Flink SQL DDL has identity partitions
only, so the seed's ``dt`` column is the partition). icetide sends malformed records to a
dead-letter table; the peer, like the seed, drops them.

Everything here is plain data: :func:`job_spec` is what ``job.py`` runs in PyFlink's venv.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

CATALOG = "peer"
DATABASE = "ods_behavior"
TABLE = "clickevent"
SOURCE = "clicks"
PRODUCTS = "products"
#: the sink's columns, in icetide's ODS order (its ``_kafka_*`` provenance left out)
COLUMNS = ("webpageId", "uid", "productId", "cookieId", "expendTime", "updateTime", "name",
           "product_price", "eventTime", "dt")
REQUIRED = ("uid", "productId", "updateTime")
#: optional integer fields: read as text, a value that is not an integer drops the row
CHECKED_INTS = ("webpageId", "expendTime")


@dataclass(frozen=True)
class JobOptions:
    """Where the job reads and writes, and how often it commits."""

    bootstrap: str
    topic: str
    warehouse: str  # a local directory: the peer's own Iceberg warehouse (hadoop catalog)
    jdbc_url: str  # the products table's database, e.g. jdbc:mysql://127.0.0.1:3306/user_db
    jdbc_user: str
    jdbc_password: str
    checkpoint_s: float = 2.0
    parallelism: int = 2
    group_id: str = "icetide-flink-peer"


class JobSpec(TypedDict):
    """What ``job.py`` runs: Flink configuration, jar files and SQL statements in order."""

    config: dict[str, str]
    jars: list[str]
    statements: list[str]


def _quote(value: str) -> str:
    """A Flink SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def with_options(options: dict[str, str]) -> str:
    return "WITH (\n  " + ",\n  ".join(f"{_quote(k)} = {_quote(v)}"
                                       for k, v in options.items()) + "\n)"


def source_ddl(o: JobOptions) -> str:
    """The Kafka source over icetide's click topic (the seed's ``kafka_table``)."""
    return (f"CREATE TEMPORARY TABLE {SOURCE} (\n"
            "  cookieId STRING, expendTime STRING, webpageId STRING, uid STRING,\n"
            "  productId STRING, updateTime BIGINT,\n"
            "  proctime AS PROCTIME()\n) " + with_options({
                "connector": "kafka", "topic": o.topic,
                "properties.bootstrap.servers": o.bootstrap,
                "properties.group.id": o.group_id, "scan.startup.mode": "earliest-offset",
                "format": "json", "json.ignore-parse-errors": "true",
                "json.fail-on-missing-field": "false"}))


def products_ddl(o: JobOptions) -> str:
    """The products lookup table on MariaDB (JDBC, a partial cache as the seed's)."""
    return (f"CREATE TEMPORARY TABLE {PRODUCTS} (\n"
            "  productId STRING, name STRING, description STRING,\n"
            "  product_price DECIMAL(10, 4), update_time TIMESTAMP(3),\n"
            "  PRIMARY KEY (productId) NOT ENFORCED\n) " + with_options({
                "connector": "jdbc", "url": o.jdbc_url, "table-name": "products",
                "username": o.jdbc_user, "password": o.jdbc_password,
                "lookup.cache": "PARTIAL", "lookup.partial-cache.max-rows": "5000",
                "lookup.partial-cache.expire-after-write": "10s", "lookup.max-retries": "3"}))


def catalog_ddl(warehouse: str) -> str:
    """The peer's own Iceberg warehouse: a hadoop catalog in a local directory."""
    return f"CREATE CATALOG {CATALOG} " + with_options({
        "type": "iceberg", "catalog-type": "hadoop", "property-version": "1",
        "warehouse": f"file://{warehouse}"})


def sink_ddl() -> str:
    """``clickevent`` partitioned by day (format v2, Parquet: as icetide's tables)."""
    return (f"CREATE TABLE IF NOT EXISTS {CATALOG}.{DATABASE}.{TABLE} (\n"
            "  webpageId INT, uid STRING, productId STRING, cookieId STRING,\n"
            "  expendTime INT, updateTime BIGINT, name STRING,\n"
            "  product_price DECIMAL(10, 4), eventTime TIMESTAMP_LTZ(6), dt STRING\n"
            ") PARTITIONED BY (dt) " + with_options({
                "format-version": "2", "write.format.default": "parquet"}))


def insert_sql() -> str:
    """Clean, look the product up as of processing time, append."""
    event_time = "TO_TIMESTAMP_LTZ(c.updateTime, 3)"
    ints = {name: f"TRY_CAST(c.{name} AS INT)" for name in CHECKED_INTS}
    required = " AND ".join([f"c.{name} IS NOT NULL" for name in REQUIRED] + [
        f"(c.{name} IS NULL OR {cast} IS NOT NULL)" for name, cast in ints.items()])
    return (f"INSERT INTO {CATALOG}.{DATABASE}.{TABLE}\n"
            f"SELECT {ints['webpageId']}, c.uid, c.productId, c.cookieId,\n"
            f"  {ints['expendTime']}, c.updateTime,\n"
            f"  p.name, p.product_price, {event_time} AS eventTime,\n"
            f"  DATE_FORMAT({event_time}, 'yyyyMMdd') AS dt\n"
            f"FROM {SOURCE} AS c\n"
            f"LEFT JOIN {PRODUCTS} FOR SYSTEM_TIME AS OF c.proctime AS p\n"
            "  ON c.productId = p.productId\n"
            f"WHERE {required}")


def flink_config(checkpoint_s: float, parallelism: int) -> dict[str, str]:
    """Checkpoints (= commits) every ``checkpoint_s``, exactly-once, UTC days."""
    return {
        "execution.checkpointing.interval": f"{int(checkpoint_s * 1000)}ms",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
        "parallelism.default": str(parallelism),
        "table.local-time-zone": "UTC",
        "table.exec.source.idle-timeout": "0ms",
        # the benchmark stops a job's processes (SIGSTOP) while icetide has the machine:
        # an hour, not 50 s, before a silent task manager counts as lost and fails the job
        "heartbeat.timeout": "3600000",
    }


def job_spec(o: JobOptions, jars: list[str]) -> JobSpec:
    """The whole job for ``job.py``: config, jars (``pipeline.jars``) and statements."""
    return JobSpec(
        config=flink_config(o.checkpoint_s, o.parallelism), jars=jars,
        statements=[source_ddl(o), products_ddl(o), catalog_ddl(o.warehouse),
                    f"CREATE DATABASE IF NOT EXISTS {CATALOG}.{DATABASE}", sink_ddl(),
                    insert_sql()])
