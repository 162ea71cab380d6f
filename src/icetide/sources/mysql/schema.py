"""Table schemas of followed MySQL tables, read from ``information_schema``.

The schema (:class:`icetide.cdc.schema.TableSchema`) is read when the source starts and
re-read when the binlog shows DDL on the table; :mod:`icetide.cdc.evolution` diffs two.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from icetide.cdc.schema import Column, TableSchema
from icetide.errors import SourceError
from icetide.sources.mysql.conn import MySqlConnection
from icetide.sources.mysql.filters import SYSTEM_SCHEMAS, TableFilter, qualify
from icetide.sources.mysql.types import DEFAULT_TYPES, Converter, TypeOptions, converter, spark_type

log = logging.getLogger(__name__)


def quote(identifier: str) -> str:
    """A MySQL identifier in backquotes."""
    return "`" + identifier.replace("`", "``") + "`"


def quote_table(qualified: str) -> str:
    """``db.table`` → ```db`.`table```."""
    db, _, table = qualified.partition(".")
    return f"{quote(db)}.{quote(table)}"


def converters_of(schema: TableSchema) -> list[Converter]:
    """Value converters in column order (see :func:`types.converter`)."""
    return [converter(c.column_type, c.spark_type) for c in schema.columns]


def build_schema(
    db: str, table: str, rows: Sequence[tuple[str, str, str]], primary_key: Sequence[str],
    options: TypeOptions = DEFAULT_TYPES,
) -> TableSchema:
    """Build a schema from ``(name, COLUMN_TYPE, IS_NULLABLE)`` rows and the key columns."""
    qualified = qualify(db, table)
    if not rows:
        raise SourceError(f"table {qualified} does not exist or has no columns visible to "
                          "the CDC user; check the name and GRANT SELECT on it")
    if not primary_key:
        raise SourceError(
            f"table {qualified} has no PRIMARY KEY; CDC upserts need one: add a primary key "
            "or exclude the table"
        )
    columns = []
    for name, column_type, is_nullable in rows:
        try:
            mapped = spark_type(column_type, options)
        except SourceError as exc:
            raise SourceError(f"{qualified}.{name}: {exc}") from None
        columns.append(Column(name, column_type, mapped, is_nullable.upper() == "YES"))
    return TableSchema(db, table, tuple(columns), tuple(primary_key))


_COLUMNS_SQL = (
    "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION"
)
_PK_SQL = (
    "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
    "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION"
)


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def read_schema(
    conn: MySqlConnection, db: str, table: str, options: TypeOptions = DEFAULT_TYPES
) -> TableSchema:
    """Read the current schema of ``db.table`` (a pymysql connection)."""
    with conn.cursor() as cur:
        cur.execute(_COLUMNS_SQL, (db, table))
        rows = [(_text(r[0]), _text(r[1]), _text(r[2])) for r in cur.fetchall()]
        cur.execute(_PK_SQL, (db, table))
        pk = [_text(r[0]) for r in cur.fetchall()]
    return build_schema(db, table, rows, pk, options)


def list_tables(conn: MySqlConnection, table_filter: TableFilter) -> list[str]:
    """Qualified names of the base tables the filter follows, sorted."""
    placeholders = ", ".join(["%s"] * len(SYSTEM_SCHEMAS))
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
            f"TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ({placeholders})",
            tuple(sorted(SYSTEM_SCHEMAS)),
        )
        names = [qualify(_text(db), _text(t)) for db, t in cur.fetchall()]
    return table_filter.select(names)
