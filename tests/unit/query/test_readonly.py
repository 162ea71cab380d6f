"""The query box's read-only check: one query statement, its first word past comments."""

from __future__ import annotations

import duckdb
import pytest

from icetide.query.readonly import QueryRefusedError, check_read_only


@pytest.mark.parametrize(("query", "runs"), [
    ("SELECT 1;", "SELECT 1"),
    ("-- a comment; DROP TABLE t\n/* and ( another */ ((SELECT 1))", None),
    ("WITH x AS (SELECT ';' AS s) SELECT * FROM x", None),
    ("SELECT '-- not a comment' AS x, 'a\\' AS y", None),
    ("SHOW TABLES", None),
    ("DESCRIBE SELECT 1", None),
])
def test_read_only_queries_run(query: str, runs: str | None) -> None:
    assert check_read_only(query) == (runs or query)


@pytest.mark.parametrize(("query", "message"), [
    ("/* SELECT */ DELETE FROM t", "DELETE statements are refused"),
    ("-- SELECT\nDROP TABLE t", "DROP statements are refused"),
    ("FROM t", "FROM statements are refused"),
    ("PRAGMA version", "PRAGMA statements are refused"),
    ("SELECT 1; DROP TABLE t", "2 statements given"),
    ("  -- nothing but a comment", "the query is empty"),
    ("SHOW TABLES; SELECT 1", "2 statements given"),
])
def test_other_statements_are_refused_with_the_reason(query: str, message: str) -> None:
    with pytest.raises(QueryRefusedError, match=message):
        check_read_only(query)


@pytest.mark.parametrize("query", ["SELECT 'abc", "SELECT 1 /* unclosed"])
def test_unreadable_text_gets_duckdbs_own_syntax_error(query: str) -> None:
    with pytest.raises(duckdb.ParserException, match="unterminated"):
        check_read_only(query)
