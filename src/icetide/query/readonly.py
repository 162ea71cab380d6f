"""Which queries a read-only front end (the dashboard's query box) may run.

DuckDB parses the text (no regex guessing): exactly one statement, and it must be a
query (``SELECT``, ``WITH``, ``SHOW``, ``DESCRIBE``; DuckDB reads ``FROM t``, ``PRAGMA``
and ``SUMMARIZE`` as queries too). DDL, DML, ``COPY``, ``CALL``, ``ATTACH``, ``EXPLAIN``,
``SET`` and the like are refused with the reason.
"""

from __future__ import annotations

import re

import duckdb

from icetide.errors import IcetideError

#: First words a query-box query may start with.
ALLOWED_WORDS = ("SELECT", "WITH", "SHOW", "DESCRIBE")


class QueryRefusedError(IcetideError):
    """A query a read-only front end does not run (DDL, DML, CALL, several statements)."""


class QueryTimeoutError(IcetideError):
    """A query ran longer than its time limit and was interrupted."""


def _first_word(query: str) -> str:
    text = re.sub(r"(--[^\n]*\n?|/\*.*?\*/|\s)+", " ", query, flags=re.S).strip()
    text = text.lstrip("(").strip()
    return text.split(" ", 1)[0].upper() if text else ""


def check_read_only(query: str) -> str:
    """``query`` stripped, when it is one read-only statement; else :class:`QueryRefusedError`.

    Syntax errors surface as ``duckdb.Error`` with DuckDB's message.
    """
    word = _first_word(query)
    hint = f"only queries starting with {', '.join(ALLOWED_WORDS)} run here"
    if not word:
        raise QueryRefusedError(f"the query is empty: write one statement ({hint})")
    if word not in ALLOWED_WORDS:
        raise QueryRefusedError(
            f"{word} statements are refused: {hint} (read-only; use `icetide sql` with "
            "the Spark engine to change tables)")
    con = duckdb.connect()
    try:
        statements = con.extract_statements(query)
    finally:
        con.close()
    if len(statements) != 1:
        raise QueryRefusedError(
            f"{len(statements)} statements given: send exactly one ({hint})")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise QueryRefusedError(f"a {kind.name} statement is refused: {hint}")
    return query.strip().rstrip(";").strip()
