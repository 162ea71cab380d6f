"""Spark SQL text helpers: identifier quoting and literals (pure, no JVM).

Every identifier icetide puts into SQL goes through :func:`quote_ident`, so column and
table names with spaces, dots, dashes or backticks are safe. String literals use
backslash escapes, which is Spark's default (``spark.sql.parser.escapedStringLiterals``
must stay ``false``). Note that Spark reads ``'a''b'`` as two adjacent literals
(``'ab'``), so doubling quotes is *not* an escape in Spark SQL.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from decimal import Decimal

import sqlglot
from sqlglot import TokenType
from sqlglot.errors import SqlglotError

from icetide.errors import PipelineError, TableError

__all__ = [
    "join_qualified",
    "quote_ident",
    "quote_qualified",
    "quote_table",
    "raise_error_sql",
    "split_qualified",
    "sql_and",
    "sql_literal",
    "sql_string",
]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_ident(name: str) -> str:
    """One identifier in backticks, embedded backticks doubled: ``a`b`` → ```a``b```."""
    if not isinstance(name, str) or not name:
        raise TableError(
            f"invalid SQL identifier {name!r}: expected a non-empty string such as 'user_id'"
        )
    return "`" + name.replace("`", "``") + "`"


def split_qualified(name: str) -> tuple[str, ...]:
    """Split ``db.table`` into its parts; a part may be backtick-quoted (``db.`a.b```).

    sqlglot's Spark tokenizer reads the quoting; an unquoted part is the text between
    the dots as written (so ``my-db`` or a keyword such as ``order`` stays a name)."""
    try:
        tokens = sqlglot.tokenize(name, read="spark")
    except SqlglotError:
        raise _bad_name(name, "an unclosed backtick") from None
    parts: list[str] = []
    begin, quoted = 0, None  # where the part starts; its quoted token, if it is one
    for token in [*tokens, None]:
        if token is not None and token.token_type != TokenType.DOT:
            if quoted is not None:
                raise _bad_name(name, "text after a closing backtick")
            if token.token_type == TokenType.IDENTIFIER:
                if name[begin:token.start].strip():
                    raise _bad_name(name, "text before an opening backtick")
                quoted = token.text
            continue
        end = len(name) if token is None else token.start
        part = quoted if quoted is not None else name[begin:end].strip()
        if not part:
            raise _bad_name(name, "an empty part")
        parts.append(part)
        begin, quoted = end + 1, None
    return tuple(parts)


def _bad_name(name: str, problem: str) -> TableError:
    return TableError(
        f"invalid table name {name!r}: it has {problem}; write it as db.table, quoting odd "
        "parts with backticks, e.g. db.`my table`"
    )


def join_qualified(parts: Sequence[str]) -> str:
    """Inverse of :func:`split_qualified`: backtick only the parts that need it."""
    out = []
    for part in parts:
        out.append(part if _PLAIN.fullmatch(part) else quote_ident(part))
    return ".".join(out)


def quote_qualified(name: str) -> str:
    """``db.table`` (or any dotted name, e.g. a temp view) → ```db`.`table```."""
    return ".".join(quote_ident(p) for p in split_qualified(name))


def quote_table(catalog: str | None, table: str) -> str:
    """``quote_table("lake", "db.table")`` → ```lake`.`db`.`table```.

    ``table`` needs a namespace (``db.table``; nested namespaces are allowed). With
    ``catalog=None`` the session's current catalog is used.
    """
    parts = split_qualified(table)
    if len(parts) < 2:
        raise TableError(
            f"table name {table!r} has no namespace: write it as db.table (e.g. 'dim_db.{table}')"
        )
    prefix = () if catalog is None else (catalog,)
    return ".".join(quote_ident(p) for p in (*prefix, *parts))


def sql_string(value: str) -> str:
    """A Spark SQL string literal with backslash escapes: ``it's`` → ``'it\\'s'``."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f"'{escaped}'"


def _neg(text: str, negative: bool) -> str:
    return f"({text})" if negative else text


def _float(value: float) -> str:
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
    return _neg(repr(value) + "D", value < 0)


def _decimal(value: Decimal) -> str:
    if not value.is_finite():
        raise PipelineError(
            f"cannot write Decimal {value!r} as a Spark SQL literal: DECIMAL has no NaN or "
            "infinity; use a float or filter the value out"
        )
    return _neg(format(value, "f") + "BD", value < 0)


def sql_literal(value: object) -> str:
    """A Python value as a Spark SQL literal.

    ``None`` → ``NULL``; ``bool``; ``int``; ``float`` → DOUBLE (``1.5D``, NaN/±Infinity by
    CAST); ``Decimal`` → DECIMAL (``1.50BD``); ``str``; ``bytes`` → ``X'..'``;
    ``date`` → ``DATE '..'``; timezone-aware ``datetime`` → ``TIMESTAMP '..+00:00'``;
    naive ``datetime`` → ``TIMESTAMP_NTZ '..'``. Negative numbers are parenthesised.
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return _neg(str(value), value < 0)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, str):
        return sql_string(value)
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, dt.datetime):
        kind = "TIMESTAMP_NTZ" if value.tzinfo is None else "TIMESTAMP"
        return f"{kind} '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise PipelineError(
        f"cannot write {value!r} of type {type(value).__name__} as a Spark SQL literal: use "
        "None, bool, int, float, Decimal, str, bytes, date or datetime"
    )


def sql_and(*conditions: str | None) -> str:
    """``a AND b`` of the given conditions; ``None`` and ``TRUE`` are dropped (empty → TRUE)."""
    kept = [c for c in conditions if c is not None and c != "TRUE"]
    if not kept:
        return "TRUE"
    return " AND ".join(f"({c})" if " OR " in c else c for c in kept)


def raise_error_sql(*parts: str) -> str:
    """``raise_error(concat(...))``: ``parts`` are SQL expressions (use :func:`sql_string`)."""
    return f"raise_error(concat({', '.join(parts)}))"
