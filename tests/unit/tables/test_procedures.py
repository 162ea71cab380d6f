"""Procedure calls: parsing, validation, generated SQL."""

from __future__ import annotations

import pytest

from icetide.errors import MaintenanceError
from icetide.tables.procedures import call_sql, is_call, parse_call, split_args


def test_named_call_is_parsed_and_rendered_with_the_catalog() -> None:
    call = parse_call("system.rewrite_data_files(table => 'ods.click', strategy => 'sort', "
                      "sort_order => 'zorder(productId, uid)')")
    assert call.name == "rewrite_data_files"
    assert dict(call.args)["sort_order"] == "'zorder(productId, uid)'"
    assert call.sql("lake") == (
        "CALL `lake`.system.rewrite_data_files(table => 'ods.click', strategy => 'sort', "
        "sort_order => 'zorder(productId, uid)')")


def test_call_keyword_catalog_and_positional_arguments() -> None:
    call = parse_call("CALL other.system.expire_snapshots('db.t', TIMESTAMP '2026-01-01', 5);")
    assert call.catalog == "other"
    assert [k for k, _ in call.args] == ["table", "older_than", "retain_last"]
    assert is_call("  call lake.system.x()") and not is_call("SELECT 1")


@pytest.mark.parametrize(("text", "message"), [
    ("system.compact(table => 'db.t')", "unknown procedure 'compact'"),
    ("system.rewrite_data_files(table => 'db.t', stratgy => 'sort')",
     "unknown argument 'stratgy' of rewrite_data_files"),
    ("system.rewrite_data_files(strategy => 'sort')", "needs argument 'table'"),
    ("system.expire_snapshots(table => 'a', table => 'b')", "given twice"),
    ("system.expire_snapshots(table => 'a', 5)", "positional argument '5'"),
    ("system.rewrite_manifests('a', true, 1, 'x', 2)", "at most 4 arguments"),
    ("SELECT 1", "not a procedure call"),
    ("system.rewrite_manifests(table => 'a)", "unbalanced"),
])
def test_bad_calls_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(MaintenanceError, match=message):
        parse_call(text)


def test_split_args_respects_quotes_and_parentheses() -> None:
    assert split_args("a => 'x, y', b => map('k', 'v'), c => 'it\\'s'") == [
        "a => 'x, y'", " b => map('k', 'v')", " c => 'it\\'s'"]
    assert split_args("  ") == []


def test_generated_call_renders_options_as_a_map() -> None:
    sql = call_sql("lake", "rewrite_data_files",
                   {"table": "db.t", "options": {"min-input-files": "2"}})
    assert sql == ("CALL `lake`.system.rewrite_data_files(table => 'db.t', "
                   "options => map('min-input-files', '2'))")
