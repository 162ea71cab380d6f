"""Pure schema helpers: DDL strings → ``{column: type}`` and schema comparison.

A DDL string (``"uid BIGINT NOT NULL, `odd name` STRING COMMENT 'x, y'"``) is parsed by
sqlglot, so quotes, nested types and comments need no hand-written splitting.

Schemas are plain mappings of column name → Spark SQL type string (``"bigint"``,
``"struct<a:int>"``), so they can be compared without a JVM. Column names compare
case-insensitively (Spark's default); types are compared as sqlglot spells them, so
aliases compare equal (``integer``→``int``, ``long``→``bigint``, ``varchar(n)``→``string``,
...) and a struct's field names stay names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from icetide.errors import PipelineError

_STRING = exp.DataType.build("string")
_DEFAULT_DECIMAL = exp.DataType.build("decimal(10, 0)")


@lru_cache(maxsize=4096)
def normalize_type(type_sql: str) -> str:
    """A canonical spelling of a Spark SQL type, for comparison: read by sqlglot (Spark
    dialect), which writes each alias one way (``integer``→``int``, ``long``→``bigint``,
    ``numeric``→``decimal``); ``varchar(n)`` and ``char(n)`` are ``string``, a bare
    ``decimal`` is ``decimal(10,0)``; lower case, without spaces. A type sqlglot does not
    know (Spark's ``void``) is only lower-cased and stripped of spaces."""
    try:
        tree = exp.DataType.build(type_sql, dialect="spark")
    except SqlglotError:
        return "".join(type_sql.lower().split())
    return _spelling(tree)


def _canonical(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.DataType):
        if node.is_type(exp.DType.VARCHAR, exp.DType.CHAR):
            return _STRING.copy()
        if node.is_type(exp.DType.DECIMAL) and not node.expressions:
            return _DEFAULT_DECIMAL.copy()
    return node


def _spelling(tree: exp.DataType) -> str:
    return "".join(tree.transform(_canonical).sql("spark").lower().split())


def _columns(ddl: str) -> list[exp.ColumnDef]:
    """The column definitions of ``ddl``, parsed by sqlglot (Spark dialect) as the fields
    of a struct: that grammar takes both ``name TYPE`` and ``name: TYPE``, ``NOT NULL``
    and ``COMMENT``. Read inside a ``CAST`` so that text sqlglot cannot read is an error;
    a bare struct type would drop the fields from there on."""
    if not ddl.strip():
        return []
    sql = f"CAST(NULL AS STRUCT<{ddl}>)"
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as error:
        errors = getattr(error, "errors", None) or [{}]
        near = errors[0].get("highlight") or ddl
        raise PipelineError(
            f"schema column near {near!r} in {ddl!r} is not 'name TYPE': write e.g. "
            "'uid BIGINT, eventTime TIMESTAMP'") from None
    if not (isinstance(tree, exp.Cast) and tree.this.sql() == "NULL"
            and tree.to.is_type(exp.DType.STRUCT)):
        raise PipelineError(f"schema {ddl!r} is not a column list: write e.g. 'uid BIGINT'")
    return [c for c in tree.to.expressions if isinstance(c, exp.ColumnDef)]


def parse_ddl(ddl: str) -> dict[str, str]:
    """``"a INT NOT NULL, `b c` STRING COMMENT 'x'"`` → ``{"a": "int", "b c": "string"}``."""
    columns: dict[str, str] = {}
    for column in _columns(ddl):
        name, kind = column.this, column.args.get("kind")
        if kind is None or (not name.quoted and name.name[:1].isdigit()):
            raise PipelineError(
                f"schema column {column.sql('spark')!r} is not 'name TYPE': write e.g. "
                "'uid BIGINT, eventTime TIMESTAMP'")
        if name.name.lower() in (c.lower() for c in columns):
            raise PipelineError(f"schema {ddl!r} lists column {name.name!r} twice: remove one")
        columns[name.name] = _spelling(kind)
    if not columns:
        raise PipelineError(f"schema {ddl!r} has no columns: write e.g. 'uid BIGINT'")
    return columns


@dataclass(frozen=True)
class SchemaDiff:
    """How a produced schema differs from a declared one."""

    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, str, str], ...] = ()  # (column, declared, produced)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.mismatched)

    def describe(self) -> list[str]:
        """One human sentence per difference."""
        out = [f"column {c} is declared but the query does not produce it" for c in self.missing]
        out += [f"column {c} is produced but not declared (add it to the schema)"
                for c in self.extra]
        out += [f"column {c} is declared {d} but the query produces {p} (cast it)"
                for c, d, p in self.mismatched]
        return out


def compare_schemas(declared: Mapping[str, str], produced: Mapping[str, str]) -> SchemaDiff:
    """Compare ``{column: type}`` mappings; names case-insensitively, types normalised."""
    produced_by_key = {name.lower(): (name, t) for name, t in produced.items()}
    declared_keys = {name.lower() for name in declared}
    missing, mismatched = [], []
    for name, declared_type in declared.items():
        hit = produced_by_key.get(name.lower())
        if hit is None:
            missing.append(name)
        elif normalize_type(declared_type) != normalize_type(hit[1]):
            mismatched.append((name, normalize_type(declared_type), normalize_type(hit[1])))
    extra = [name for name in produced if name.lower() not in declared_keys]
    return SchemaDiff(tuple(missing), tuple(extra), tuple(mismatched))


def has_column(schema: Mapping[str, str], column: str) -> bool:
    """Whether the top-level column of ``column`` (``a`` of ``a.b``) is in ``schema``."""
    top = column.split(".")[0].lower()
    return any(name.lower() == top for name in schema)
