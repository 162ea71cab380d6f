"""Helpers of the MySQL CDC integration tests: databases, a concurrent writer, a model target."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from icetide.cdc.schema import TableSchema
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.model.source import Position
from icetide.sources.mysql.schema import converters_of, quote, quote_table
from icetide.sources.mysql.source import MySqlSource

ITEMS = (
    "CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT, "
    "price DECIMAL(10,4), updated TIMESTAMP(3) NULL, note TEXT)"
)


def new_database(info: MariaDBInfo, prefix: str = "t") -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {quote(name)}")
    conn.close()
    return name


def create_items(info: MariaDBInfo, db: str, rows: int, table: str = "items") -> str:
    """``db.items`` with ``rows`` rows (ids 1..rows); returns the qualified name."""
    qualified = f"{db}.{table}"
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute(ITEMS.format(t=quote_table(qualified)))
        data = [(i, f"item{i}", i % 17, Decimal(i) / 7, f"note {i}") for i in range(1, rows + 1)]
        for at in range(0, len(data), 5000):
            cur.executemany(
                f"INSERT INTO {quote_table(qualified)} VALUES (%s, %s, %s, ROUND(%s, 4), "
                "NOW(3), %s)", data[at:at + 5000])
    conn.close()
    return qualified


Model = dict[tuple[Any, ...], tuple[Any, ...]]


def apply(model: Model, rows: list[tuple[Any, ...]], schema: TableSchema) -> None:
    """Apply Spark-ready rows (upsert / delete by key) to an in-memory target."""
    n = len(schema.columns)
    key_idx = [schema.names.index(k) for k in schema.primary_key]
    for row in rows:
        values = row[:n]
        key = tuple(values[i] for i in key_idx)
        if row[n] == "d":
            model.pop(key, None)
        else:
            model[key] = values


def source_state(info: MariaDBInfo, schema: TableSchema) -> Model:
    """The table as it is now, converted like the source converts."""
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT {', '.join(quote(c) for c in schema.names)} "
                    f"FROM {quote_table(schema.qualified)}")
        fetched = cur.fetchall()
    conn.close()
    convert = converters_of(schema)
    key_idx = [schema.names.index(k) for k in schema.primary_key]
    out: Model = {}
    for raw in fetched:
        values = tuple(f(v) for f, v in zip(convert, raw, strict=True))
        out[tuple(values[i] for i in key_idx)] = values
    return out


def drain(source: MySqlSource, start: Position, models: dict[str, Model],
          max_records: int = 500) -> Position:
    """Plan/apply batches until the source has nothing more; returns the last end."""
    pos = start
    while True:
        batch = source.plan(pos, max_records)
        if batch is None:
            return pos
        for table, rows in source.rows(batch).items():
            apply(models.setdefault(table, {}), rows, source.schema(table))
        pos = batch.end
