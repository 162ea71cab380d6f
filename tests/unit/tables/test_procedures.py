"""Procedure calls: parsing, validation, generated SQL."""

from __future__ import annotations

import pytest

from icetide.errors import MaintenanceError
from icetide.tables.procedures import call_sql, is_call, parse_call


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
    ("CALL lake.system.expire_snapshots('db.t'); DROP TABLE db.t", "not one procedure call"),
    ("system.rewrite_manifests(table => map('a', 'b')", "not a procedure call"),
    ("lake.db.system.rewrite_manifests(table => 'a')", "not a procedure call"),
    ("lake.system.rewrite_manifests", "not a procedure call"),
    ("CALL lake.system.rewrite_manifests('a'", "not a procedure call"),
])
def test_bad_calls_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(MaintenanceError, match=message):
        parse_call(text)


def test_argument_values_are_kept_as_written_past_quotes_parentheses_and_comments() -> None:
    call = parse_call(
        "CALL lake.system.rewrite_data_files(table => 'db.t' /* , strategy => 'x' */,\n"
        "  -- a comment, with a comma\n"
        "  where => 'a = ''x, y'' AND b IN (1, 2)', options => map('k', 'it\\'s'),\n"
        "  sort_order => 'zorder(a, b)')  -- trailing")
    assert call.args == (("table", "'db.t'"), ("where", "'a = ''x, y'' AND b IN (1, 2)'"),
                         ("options", "map('k', 'it\\'s')"), ("sort_order", "'zorder(a, b)'"))
    call = parse_call("`my cat`.system.expire_snapshots('db.t', TIMESTAMP '2026-01-01 00:00:00', "
                      "5L)")
    assert call.catalog == "my cat"
    assert call.sql("lake") == ("CALL `my cat`.system.expire_snapshots(table => 'db.t', "
                                "older_than => TIMESTAMP '2026-01-01 00:00:00', retain_last => 5L)")


def test_is_call_reads_past_comments_and_unclosed_quotes() -> None:
    assert is_call("-- compact\n/* now */ CALL lake.system.rewrite_data_files('db.t')")
    assert is_call("CALL lake.system.x('a")
    assert not is_call("SELECT 'call x'") and not is_call("SELECT 'x")


def test_generated_call_renders_options_as_a_map() -> None:
    sql = call_sql("lake", "rewrite_data_files",
                   {"table": "db.t", "options": {"min-input-files": "2"}})
    assert sql == ("CALL `lake`.system.rewrite_data_files(table => 'db.t', "
                   "options => map('min-input-files', '2'))")


@pytest.mark.parametrize(("text", "sql"), [
    ("system.create_tag(table => 'db.t', tag => 'v1', snapshot_id => 42, retain_days => 7)",
     "ALTER TABLE `lake`.`db`.`t` CREATE TAG `v1` AS OF VERSION 42 RETAIN 7 DAYS"),
    ("CALL other.system.create_branch('db.t', 'dev')",
     "ALTER TABLE `other`.`db`.`t` CREATE BRANCH `dev`"),
    ("system.drop_tag(table => 'db.t', tag => 'it''s')",
     "ALTER TABLE `lake`.`db`.`t` DROP TAG `it's`"),
    ("system.drop_branch(table => 'db.t', branch => 'dev')",
     "ALTER TABLE `lake`.`db`.`t` DROP BRANCH `dev`"),
    ("system.create_tag(table => 'db.t', tag => 'a\\'b', snapshot_id => 42L, retain_days => 7)",
     "ALTER TABLE `lake`.`db`.`t` CREATE TAG `a'b` AS OF VERSION 42 RETAIN 7 DAYS"),
])
def test_tags_and_branches_are_calls_rendered_as_iceberg_ddl(text: str, sql: str) -> None:
    assert parse_call(text).sql("lake") == sql


@pytest.mark.parametrize(("text", "message"), [
    ("system.create_tag(table => 'db.t', tag => v1)", r"tag => v1 must be a quoted string"),
    ("system.create_tag(table => 'db.t', tag => 'v1', retain_days => 'x')",
     r"retain_days => 'x' must be a whole number"),
    ("system.create_tag(table => 'db.t')", r"create_tag needs argument 'tag'"),
    ("system.create_tag(table => 'db.t', tag => 'v1', retain_days => -7)",
     r"retain_days => -7 must be a whole number"),
    ("system.create_tag(table => 'db.t', tag => 'v1', retain_days => 7.5)",
     r"retain_days => 7.5 must be a whole number"),
])
def test_a_bad_ref_call_is_refused_naming_the_argument(text: str, message: str) -> None:
    with pytest.raises(MaintenanceError, match=message):
        parse_call(text).sql("lake")


def test_call_help_lists_every_procedure_with_its_arguments() -> None:
    from click.testing import CliRunner

    from icetide.cli.maintain_cmd import call

    shown = CliRunner().invoke(call, ["--help"]).output
    assert "rollback_to_timestamp(table, timestamp)" in shown
    assert "create_tag(table, tag, [snapshot_id], [retain_days])" in shown
    assert "drop_branch(table, branch)" in shown
