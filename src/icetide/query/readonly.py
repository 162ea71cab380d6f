"""Which queries a read-only front end (the dashboard's query box) may run.

DuckDB parses the text (no regex guessing): exactly one statement, and it must be a
query (``SELECT``, ``WITH``, ``SHOW``, ``DESCRIBE``; DuckDB reads ``FROM t``, ``PRAGMA``
and ``SUMMARIZE`` as queries too, so the first word is checked as well, read past
comments by sqlglot's tokenizer). DDL, DML, ``COPY``, ``CALL``, ``ATTACH``, ``EXPLAIN``,
``SET`` and the like are refused with the reason.
"""

from __future__ import annotations

import duckdb
import sqlglot
from sqlglot import TokenType
from sqlglot.errors import TokenError

from icetide.errors import IcetideError

#: First words a query-box query may start with.
ALLOWED_WORDS = ("SELECT", "WITH", "SHOW", "DESCRIBE")


class QueryRefusedError(IcetideError):
    """A query a read-only front end does not run (DDL, DML, CALL, several statements)."""


class QueryTimeoutError(IcetideError):
    """A query ran longer than its time limit and was interrupted."""


def _statements(query: str) -> list[duckdb.Statement]:
    """DuckDB's statements of ``query``; a syntax error raises ``duckdb.Error``."""
    con = duckdb.connect()
    try:
        return con.extract_statements(query)
    finally:
        con.close()


def _first_word(query: str) -> str:
    """The statement's first word, past comments and opening parentheses, by sqlglot's
    DuckDB tokenizer. Text it cannot tokenize (an unclosed quote or comment) goes to
    DuckDB's parser, whose error names the problem."""
    try:
        tokens = sqlglot.tokenize(query, read="duckdb")
    except TokenError as error:
        _statements(query)
        raise QueryRefusedError(f"the query cannot be read ({error})") from None
    words = [t for t in tokens if t.token_type != TokenType.L_PAREN]
    return words[0].text.upper() if words else ""


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
    statements = _statements(query)
    if len(statements) != 1:
        raise QueryRefusedError(
            f"{len(statements)} statements given: send exactly one ({hint})")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise QueryRefusedError(f"a {kind.name} statement is refused: {hint}")
    return query.strip().rstrip(";").strip()
