"""Faithful types: the snapshot and the binlog give the same Spark values for every
supported MySQL type, TIMESTAMP as a UTC instant whatever the writer's time zone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from mysql_cdc_helpers import Model, drain, new_database

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig
from icetide.sources.mysql.types import TypeOptions

pytestmark = pytest.mark.mariadb

DDL = """CREATE TABLE all_types (
 id BIGINT UNSIGNED NOT NULL PRIMARY KEY, flag TINYINT(1), ti TINYINT UNSIGNED, si SMALLINT,
 mi MEDIUMINT, i INT UNSIGNED, bi BIGINT, price DECIMAL(10,4), f FLOAT, d DOUBLE, b1 BIT(1),
 b9 BIT(9), y YEAR, c CHAR(3), vc VARCHAR(300), t TEXT, j JSON, e ENUM('small','big'),
 s SET('a','b','c'), bn BINARY(4), vb VARBINARY(10), bl BLOB, dd DATE, dtt DATETIME(6),
 ts TIMESTAMP(3) NULL, tm TIME(2))"""

VALUES = ("{id}, 1, 255, -32768, 8388607, 4294967295, -9223372036854775808, 123456.789, 1.5, "
          "2.25, b'1', b'100000001', 2024, 'abc', 'ünïcødé ✓', REPEAT('x', 300), "
          "'{{\"k\": [1, 2]}}', 'big', 'c,a', x'00ff0102', x'0a0b', x'deadbeef', "
          "'2024-02-29', '2024-03-01 08:00:00.123456', '2024-03-01 08:00:00.5', '-12:30:15.25'")

EXPECTED = {
    "flag": True, "ti": 255, "si": -32768, "mi": 8388607, "i": 4294967295,
    "bi": -9223372036854775808, "price": Decimal("123456.7890"), "f": 1.5, "d": 2.25,
    "b1": True, "b9": 257, "y": 2024, "c": "abc", "vc": "ünïcødé ✓", "t": "x" * 300,
    "e": "big", "s": "a,c", "bn": b"\x00\xff\x01\x02", "vb": b"\x0a\x0b",
    "bl": b"\xde\xad\xbe\xef", "dd": dt.date(2024, 2, 29),
    "dtt": dt.datetime(2024, 3, 1, 8, 0, 0, 123456),  # wall clock, no zone
    "ts": dt.datetime(2024, 3, 1, 0, 0, 0, 500000, tzinfo=dt.UTC),  # 08:00 at +08:00
    "tm": "-12:30:15.250000",
}
SPARK_TYPES = {
    "id": "decimal(20,0)", "flag": "boolean", "ti": "int", "si": "int", "mi": "int",
    "i": "bigint", "bi": "bigint", "price": "decimal(10,4)", "f": "float", "d": "double",
    "b1": "boolean", "b9": "bigint", "y": "int", "c": "string", "vc": "string", "t": "string",
    "j": "string", "e": "string", "s": "string", "bn": "binary", "vb": "binary",
    "bl": "binary", "dd": "date", "dtt": "timestamp_ntz", "ts": "timestamp", "tm": "string",
}


def insert(info: MariaDBInfo, db: str, key: int) -> None:
    conn = info.connect(database=db)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+08:00'")
        cur.execute(f"INSERT INTO all_types VALUES ({VALUES.format(id=key)})")
        cur.execute("INSERT INTO all_types (id) VALUES (%s)", (key + 1,))  # all NULL
    conn.close()


def by_name(source: MySqlSource, table: str, values: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(source.schema(table).names, values, strict=True))


def test_snapshot_and_binlog_values_match(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    conn = mariadb.connect(database=db)
    with conn.cursor() as cur:
        cur.execute(DDL)
    conn.close()
    table = f"{db}.all_types"
    insert(mariadb, db, 1)
    source = MySqlSource(MySqlSourceConfig(
        name=db, connection=mariadb.connect_args("cdc"), include=(rf"{db}\..*",),
        types=TypeOptions(tinyint1_as_boolean=True)))
    assert {c.name: c.spark_type for c in source.schema(table).columns} == SPARK_TYPES
    models: dict[str, Model] = {}
    pos = drain(source, source.initial_position(), models)
    insert(mariadb, db, 10)  # the same values through the binlog
    drain(source, pos, models)
    assert {c.name: c.spark_type for c in source.schema(table).columns} == SPARK_TYPES
    rows = models[table]
    snap, binlog = by_name(source, table, rows[(1,)]), by_name(source, table, rows[(10,)])
    assert snap["id"] == Decimal(1) and binlog["id"] == Decimal(10)
    for name, expected in EXPECTED.items():
        assert snap[name] == expected, name
        assert binlog[name] == expected, name
    assert snap["j"].replace(" ", "") == binlog["j"].replace(" ", "") == '{"k":[1,2]}'
    nulls = [by_name(source, table, rows[(k,)]) for k in (2, 11)]
    for row in nulls:
        assert all(v is None for n, v in row.items() if n != "id")
    source.close()
