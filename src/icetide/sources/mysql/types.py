"""MySQL/MariaDB column types → Spark/Iceberg types, and value converters (pure).

:func:`spark_type` maps an ``information_schema.COLUMNS.COLUMN_TYPE`` (``decimal(10,4)``,
``int(10) unsigned``, ``enum('a','b')``), parsed by sqlglot's MySQL dialect, to a Spark
SQL type string, and refuses what has no faithful Spark type (:class:`SourceError`
naming it). :func:`converter` turns a pymysql or binlog value into its Spark value:
DATETIME stays a wall-clock ``timestamp_ntz``, TIMESTAMP becomes a timezone-aware UTC
instant, zero dates become null, SET members are joined in definition order. The
mapping, type by type, and why: docs/cdc.md ("Column types").
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import SupportsFloat, SupportsInt, cast

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError

from icetide.cdc.types import decimal_parts
from icetide.errors import SourceError

Converter = Callable[[object], object]

_INTS = {"tinyint", "smallint", "mediumint", "int"}
_STRINGS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum", "set"}
_BINARIES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_SIMPLE = {"float": "float", "double": "double", "date": "date", "year": "int",
           "time": "string", "boolean": "boolean"}
#: sqlglot's names of MySQL types that are not MySQL's own spelling: unsigned integers
#: and decimals (``UINT`` is ``int unsigned``), and ``TIMESTAMP`` (an instant: sqlglot's
#: ``TIMESTAMPTZ``; MySQL's ``DATETIME`` stays ``DATETIME``).
_BASES: dict[exp.DType, str] = {
    **{t: name.lower() for t, name in MySQL.Generator.UNSIGNED_TYPE_MAPPING.items()},
    exp.DType.TIMESTAMPTZ: "timestamp",
}
MAX_DECIMAL_PRECISION = 38


@dataclass(frozen=True)
class TypeOptions:
    """Choices in the type mapping."""

    tinyint1_as_boolean: bool = False


DEFAULT_TYPES = TypeOptions()


@dataclass(frozen=True)
class ParsedType:
    """A parsed ``COLUMN_TYPE``: base name (MySQL's canonical one: ``integer`` is ``int``),
    the arguments inside its parentheses (ENUM/SET members unquoted), unsigned flag."""

    base: str
    params: tuple[str, ...]
    unsigned: bool

    def members(self) -> list[str]:
        """ENUM/SET members in definition order."""
        return list(self.params) if self.base in ("enum", "set") else []


@lru_cache(maxsize=4096)
def parse_column_type(column_type: str) -> ParsedType:
    """Parse ``int(10) unsigned`` → ``ParsedType('int', ('10',), True)``.

    sqlglot's MySQL dialect reads it as the type of a column definition, which also takes
    ``zerofill`` and refuses trailing words (a bare type would drop them). Cached: every
    TABLE_MAP event maps its columns again."""
    try:
        tree = sqlglot.parse_one(f"CREATE TABLE t (c {column_type})", read="mysql")
    except SqlglotError:
        raise _unsupported(column_type) from None
    schema = tree.this if isinstance(tree, exp.Create) else None
    columns = schema.expressions if isinstance(schema, exp.Schema) else []
    parsed = columns[0].args.get("kind") if len(columns) == 1 else None
    if not isinstance(parsed, exp.DataType):
        raise _unsupported(column_type)
    dtype = parsed.this
    base = _BASES.get(dtype, dtype.value.lower())
    params = tuple(p.name for p in parsed.expressions)
    return ParsedType(base, params, dtype in MySQL.Generator.UNSIGNED_TYPE_MAPPING)


def _unsupported(column_type: str) -> SourceError:
    return SourceError(
        f"MySQL column type {column_type!r} is not supported by the CDC source; "
        "exclude the table (exclude pattern) or change the column to a supported type"
    )


def _decimal(p: ParsedType, column_type: str) -> str:
    precision = int(p.params[0]) if p.params else 10
    scale = int(p.params[1]) if len(p.params) > 1 else 0
    if precision > MAX_DECIMAL_PRECISION:
        raise SourceError(
            f"MySQL type {column_type!r} exceeds Iceberg's decimal precision "
            f"{MAX_DECIMAL_PRECISION}; narrow the column or exclude the table"
        )
    return f"decimal({precision},{scale})"


def spark_type(column_type: str, options: TypeOptions = DEFAULT_TYPES) -> str:
    """The Spark/Iceberg type of a MySQL ``COLUMN_TYPE``; :class:`SourceError` if unsupported."""
    p = parse_column_type(column_type)
    if p.base == "tinyint" and p.params == ("1",) and options.tinyint1_as_boolean:
        return "boolean"
    if p.base in _INTS:
        return "bigint" if p.unsigned and p.base == "int" else "int"
    if p.base == "bigint":
        return "decimal(20,0)" if p.unsigned else "bigint"
    if p.base == "decimal":
        return _decimal(p, column_type)
    if p.base == "bit":
        return "boolean" if p.params in ((), ("1",)) else "bigint"
    if p.base in _STRINGS:
        return "string"
    if p.base in _BINARIES:
        return "binary"
    if p.base == "datetime":
        return "timestamp_ntz"
    if p.base == "timestamp":
        return "timestamp"
    if p.base in _SIMPLE:
        return _SIMPLE[p.base]
    raise _unsupported(column_type)


# --- value converters -------------------------------------------------------------------

def _zero_to_none(v: object) -> object:
    if isinstance(v, str | bytes):
        return None  # '0000-00-00' and other invalid dates come back as text
    return v


def _to_bool(v: object) -> bool:
    if isinstance(v, bytes):
        return any(v)
    if isinstance(v, str):
        return v.strip("0") != ""
    return bool(v)


def _to_int(v: object) -> int:
    if isinstance(v, bytes):
        return int.from_bytes(v, "big")
    if isinstance(v, str):
        return int(v, 2)  # BIT(n) from the binlog: '0101'
    return int(cast(SupportsInt, v))


def _to_float(v: object) -> float:
    return float(cast(SupportsFloat | str, v))


def format_time(v: dt.timedelta) -> str:
    """MySQL TIME text: ``-01:02:03.500000``."""
    us = (v.days * 86400 + v.seconds) * 10**6 + v.microseconds
    sign, us = ("-" if us < 0 else ""), abs(us)
    secs, frac = divmod(us, 10**6)
    text = f"{sign}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return text + (f".{frac:06d}" if frac else "")


def _string_converter(members: list[str]) -> Converter:
    order = {m: i for i, m in enumerate(members)}

    def convert(v: object) -> object:
        if isinstance(v, str):
            return v
        if isinstance(v, bytes):
            return v.decode("utf-8", errors="replace")
        if isinstance(v, set | frozenset):
            return ",".join(sorted(v, key=lambda m: (order.get(m, len(order)), m)))
        if isinstance(v, dt.timedelta):
            return format_time(v)
        if isinstance(v, dict | list):
            return json.dumps(v, separators=(",", ":"), ensure_ascii=False, default=str)
        return str(v)

    return convert


def _timestamp(v: object) -> object:
    v = _zero_to_none(v)
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)
    return v


def _date(v: object) -> object:
    v = _zero_to_none(v)
    return v.date() if isinstance(v, dt.datetime) else v


def _binary(v: object) -> object:
    return v.encode("utf-8") if isinstance(v, str) else bytes(cast(bytearray | memoryview, v))


_CONVERTERS: dict[str, Converter] = {
    "boolean": _to_bool, "int": _to_int, "bigint": _to_int, "float": _to_float, "double": _to_float,
    "date": _date, "timestamp": _timestamp, "timestamp_ntz": _zero_to_none, "binary": _binary,
}


# values of exactly these types need no conversion (the fast path of ``converter``)
_READY: dict[str, type] = {
    "boolean": bool, "int": int, "bigint": int, "float": float, "double": float,
    "string": str, "binary": bytes, "date": dt.date, "timestamp_ntz": dt.datetime,
}


def converter(column_type: str, spark: str) -> Converter:
    """A function turning a pymysql or binlog value of the column into its Spark value
    (``None`` stays ``None``)."""
    if spark == "string":
        inner = _string_converter(parse_column_type(column_type).members())
    elif decimal_parts(spark) is not None:
        def inner(v: object) -> object:
            return v if isinstance(v, Decimal) else Decimal(cast(str | int | float, v))
    else:
        inner = _CONVERTERS[spark]
    ready = Decimal if decimal_parts(spark) is not None else _READY.get(spark, type(None))

    def convert(v: object) -> object:
        return v if v is None or type(v) is ready else inner(v)

    return convert
