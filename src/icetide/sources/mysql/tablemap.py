"""Table schemas from binlog TABLE_MAP events (``binlog_row_metadata=FULL``).

Every row event is preceded by a TABLE_MAP event describing the table *as the rows were
written*: column names, type codes with precision/scale/signedness/charset, ENUM/SET
members, nullability and the primary key. The binlog reader uses it as the truth for
decoding and for detecting schema changes, because ``information_schema`` shows the
schema *now*, which is ahead of a lagging reader after DDL.

What the binlog does not carry is cosmetic for the mapping (VARCHAR length in characters,
integer display width) — except ``TINYINT(1)`` under ``tinyint1_as_boolean``; so a column
that keeps its Spark type keeps the previous schema's ``COLUMN_TYPE``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from pymysqlreplication.column import Column as BinlogColumn
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import TableMapEvent

from icetide.cdc.schema import Column, TableSchema
from icetide.errors import SourceError
from icetide.sources.mysql.types import DEFAULT_TYPES, TypeOptions, parse_column_type, spark_type

_INTS = {FIELD_TYPE.TINY: "tinyint", FIELD_TYPE.SHORT: "smallint",
         FIELD_TYPE.INT24: "mediumint", FIELD_TYPE.LONG: "int", FIELD_TYPE.LONGLONG: "bigint"}
_FIXED = {FIELD_TYPE.FLOAT: "float", FIELD_TYPE.DOUBLE: "double", FIELD_TYPE.YEAR: "year",
          FIELD_TYPE.JSON: "json", FIELD_TYPE.DATE: "date", FIELD_TYPE.NEWDATE: "date",
          FIELD_TYPE.DATETIME: "datetime", FIELD_TYPE.DATETIME2: "datetime",
          FIELD_TYPE.TIMESTAMP: "timestamp", FIELD_TYPE.TIMESTAMP2: "timestamp",
          FIELD_TYPE.TIME: "time", FIELD_TYPE.TIME2: "time", FIELD_TYPE.GEOMETRY: "geometry"}
_TEXTS = {FIELD_TYPE.VARCHAR: ("varchar", "varbinary"), FIELD_TYPE.VAR_STRING: ("varchar",
          "varbinary"), FIELD_TYPE.STRING: ("char", "binary"), FIELD_TYPE.BLOB: ("text", "blob")}


def _members(values: list[str] | None) -> str:
    return ",".join("'" + v.replace("'", "''") + "'" for v in values or [])


def column_type_of(col: BinlogColumn) -> str:
    """A MySQL ``COLUMN_TYPE`` for a pymysqlreplication column of a TABLE_MAP event."""
    t = col.type
    if t in _INTS:
        return _INTS[t] + (" unsigned" if getattr(col, "unsigned", False) else "")
    if t == FIELD_TYPE.NEWDECIMAL:
        return f"decimal({col.precision},{col.decimals})"
    if t == FIELD_TYPE.BIT:
        return f"bit({col.bits})"
    if t == FIELD_TYPE.ENUM:
        return f"enum({_members((col.enum_values or [''])[1:])})"
    if t == FIELD_TYPE.SET:
        return f"set({_members(col.set_values)})"
    if t in _TEXTS:
        return _TEXTS[t][getattr(col, "character_set_name", None) == "binary"]
    if t in _FIXED:
        return _FIXED[t]
    return f"unknown type code {t}"


def _keeps(previous: Column, column_type: str, spark: str) -> bool:
    if parse_column_type(column_type).base in ("enum", "set"):
        return False  # the binlog has the current members
    if previous.spark_type == spark:
        return True
    return (previous.spark_type == "boolean" and spark == "int"
            and parse_column_type(previous.column_type).base == "tinyint")


def _nullable(mask: bytes, i: int) -> bool:
    return bool(mask[i // 8] >> (i % 8) & 1)


def _primary_key(ev: TableMapEvent, previous: TableSchema | None) -> tuple[str, ...]:
    meta = ev.optional_metadata
    index = list(meta.simple_primary_key_list or []) or list(meta.primary_keys_with_prefix or {})
    if index:
        return tuple(ev.columns[i].name for i in index)
    return previous.primary_key if previous is not None else ()


def schema_from_tablemap(
    ev: TableMapEvent, previous: TableSchema | None, options: TypeOptions = DEFAULT_TYPES,
    renames: dict[str, str] | None = None,
) -> TableSchema:
    """The schema of the rows that follow ``ev``; ``previous`` (and ``renames``: new → old
    name) only refine MySQL type details of columns whose Spark type did not change."""
    db, table = str(ev.schema), str(ev.table)
    before = {c.name: c for c in previous.columns} if previous is not None else {}
    columns = []
    for i, col in enumerate(ev.columns):
        name = str(col.name)
        column_type = column_type_of(col)
        try:
            spark = spark_type(column_type, options)
        except SourceError as exc:
            raise SourceError(f"{db}.{table}.{name}: {exc}") from None
        prev = before.get((renames or {}).get(name, name))
        if prev is not None and _keeps(prev, column_type, spark):
            column_type, spark = prev.column_type, prev.spark_type
        columns.append(Column(name, column_type, spark, _nullable(ev.null_bitmask, i)))
    key = _primary_key(ev, previous)
    if not key:
        raise SourceError(f"table {db}.{table} has no PRIMARY KEY in the binlog's table map; "
                          "CDC upserts need one: add a primary key or exclude the table")
    return TableSchema(db, table, tuple(columns), key)


def fractional_time_columns(ev: TableMapEvent) -> tuple[str, ...]:
    """Names of TIME(n>0) columns in a TABLE_MAP event (see :func:`fix_negative_time`)."""
    return tuple(str(c.name) for c in ev.columns
                 if c.type == FIELD_TYPE.TIME2 and getattr(c, "fsp", 0))


def fix_negative_time(value: object) -> object:
    """Undo mysql-replication 1.0.17's decoding of negative TIME(n) with a fraction.

    The server stores such values as ``floor`` seconds plus a positive fraction; the
    library returns ``-(s + f)`` where the value is ``-(s + 1 - f)`` (measured on MariaDB
    10.11 for every fsp: ``-12:30:15.25`` came back as ``-12:30:15.75``).
    """
    if not isinstance(value, dt.timedelta) or value >= dt.timedelta(0):
        return value
    magnitude = -(value // dt.timedelta(microseconds=1))
    seconds, fraction = divmod(magnitude, 10**6)
    if not fraction:
        return value
    return -dt.timedelta(seconds=seconds + 1, microseconds=-fraction)


def same_shape(a: TableSchema, b: TableSchema) -> bool:
    """Same column names, Spark types, nullability and key (what the target sees)."""
    def shape(s: TableSchema) -> list[tuple[str, str, bool]]:
        return [(c.name, c.spark_type, c.nullable) for c in s.columns]
    return shape(a) == shape(b) and a.primary_key == b.primary_key


def _no_baseline(table: str) -> TableSchema | None:
    return None


@dataclass
class SchemaBook:
    """Schemas of followed tables as the binlog reader last saw them (``known``), a
    ``baseline`` (e.g. ``information_schema``) refining MySQL type details when a table is
    first seen, and the type options."""

    def seed(self, table: str, schema: TableSchema) -> None:
        """Start the binlog phase of ``table`` with the schema its snapshot was read with."""
        self.known[table] = schema
        self.seeded.add(table)

    known: dict[str, TableSchema] = field(default_factory=dict)
    baseline: Callable[[str], TableSchema | None] = _no_baseline
    options: TypeOptions = DEFAULT_TYPES
    #: tables whose known schema came from the snapshot, not yet confirmed by a table map
    #: or followed by DDL: a first map that differs is older than the snapshot (DDL ran
    #: during the snapshot), so it is adopted instead of diffed
    seeded: set[str] = field(default_factory=set)
