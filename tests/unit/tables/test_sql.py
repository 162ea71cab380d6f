"""Identifier quoting and literals (no JVM)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest

from icetide.errors import PipelineError, TableError
from icetide.tables.sql import (
    join_qualified,
    quote_ident,
    quote_qualified,
    quote_table,
    raise_error_sql,
    split_qualified,
    sql_and,
    sql_literal,
    sql_string,
)


@pytest.mark.parametrize(
    ("name", "quoted"),
    [("id", "`id`"), ("my col", "`my col`"), ("a`b", "`a``b`"), ("``", "``````"),
     ("db.t", "`db.t`"), ("ünï", "`ünï`")],
)
def test_quote_ident(name: str, quoted: str) -> None:
    assert quote_ident(name) == quoted


@pytest.mark.parametrize("bad", ["", None, 3])
def test_quote_ident_rejects_empty_and_non_strings(bad: object) -> None:
    with pytest.raises(TableError, match="invalid SQL identifier"):
        quote_ident(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "parts"),
    [("db.t", ("db", "t")), ("db.`my.table`", ("db", "my.table")),
     ("`a``b`.c", ("a`b", "c")), (" db . t ", ("db", "t")), ("a.b.c", ("a", "b", "c")),
     ("t", ("t",))],
)
def test_split_and_join_qualified(name: str, parts: tuple[str, ...]) -> None:
    assert split_qualified(name) == parts
    assert split_qualified(join_qualified(parts)) == parts


@pytest.mark.parametrize(
    ("name", "problem"),
    [("db..t", "empty part"), ("db.`t", "unclosed backtick"), ("db.`t`x", "after a closing"),
     ("", "empty part")],
)
def test_split_qualified_errors_name_the_value(name: str, problem: str) -> None:
    with pytest.raises(TableError, match=problem) as err:
        split_qualified(name)
    assert repr(name) in str(err.value) and "db.`my table`" in str(err.value)


def test_join_qualified_quotes_only_odd_parts() -> None:
    assert join_qualified(("db", "my table", "1x", "a`b")) == "db.`my table`.`1x`.`a``b`"


def test_quote_table() -> None:
    assert quote_table("lake", "db.t") == "`lake`.`db`.`t`"
    assert quote_table("lake", "db.`odd tbl`") == "`lake`.`db`.`odd tbl`"
    assert quote_table(None, "a.b.t") == "`a`.`b`.`t`"
    assert quote_qualified("my_view") == "`my_view`"
    with pytest.raises(TableError, match=r"no namespace: write it as db\.table"):
        quote_table("lake", "orders")


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (None, "NULL"), (True, "TRUE"), (False, "FALSE"), (7, "7"), (-7, "(-7)"),
        (1.5, "1.5D"), (-0.25, "(-0.25D)"), (1e20, "1e+20D"),
        (math.nan, "CAST('NaN' AS DOUBLE)"), (-math.inf, "CAST('-Infinity' AS DOUBLE)"),
        (Decimal("1.50"), "1.50BD"), (Decimal("-1E+2"), "(-100BD)"),
        ("it's", "'it\\'s'"), ("a\\b", "'a\\\\b'"), ("l1\nl2", "'l1\\nl2'"),
        (b"\x00\xff", "X'00ff'"),
        (dt.date(2024, 2, 29), "DATE '2024-02-29'"),
        (dt.datetime(2024, 1, 1, 12, 30), "TIMESTAMP_NTZ '2024-01-01 12:30:00'"),
        (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "TIMESTAMP '2024-01-01 00:00:00+00:00'"),
    ],
)
def test_sql_literal(value: object, literal: str) -> None:
    assert sql_literal(value) == literal


def test_sql_literal_errors_name_the_type() -> None:
    with pytest.raises(PipelineError, match="of type list"):
        sql_literal([1])
    with pytest.raises(PipelineError, match="DECIMAL has no NaN"):
        sql_literal(Decimal("NaN"))


def test_sql_string_never_doubles_quotes() -> None:
    # Spark reads 'a''b' as two adjacent literals ('ab'): backslash escapes only.
    assert sql_string("a'b") == "'a\\'b'"


def test_sql_and_and_raise_error() -> None:
    assert sql_and(None, "TRUE") == "TRUE"
    assert sql_and("a", None, "b OR c") == "a AND (b OR c)"
    assert raise_error_sql("'x'", "`c`") == "raise_error(concat('x', `c`))"
