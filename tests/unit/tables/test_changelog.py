"""The changelog companion table: DDL and the before/after SELECT (no JVM)."""

from __future__ import annotations

import datetime as dt

import pytest

from icetide.errors import TableError
from icetide.tables.changelog import (
    change_counts_sql,
    changelog_columns,
    changelog_ddl,
    changelog_seq_base,
    changelog_sql,
    changelog_table_name,
)
from icetide.tables.merge_engines import Deduplicate, FirstRow, PartialUpdate
from icetide.tables.merge_sql import MergeSpec

T = "`lake`.`db`.`t`"
TYPES = {"id": "int", "v": "string", "ts": "bigint"}


def spec(**kw: str | None) -> MergeSpec:
    return MergeSpec(T, "batch", ["id"], list(TYPES), **{"op_column": "_op",
                                                          "ordinal_column": "_ord", **kw})


def test_names_and_seq_base() -> None:
    assert changelog_table_name("db.orders") == "db.orders__changelog"
    assert changelog_table_name("db.`odd tbl`") == "db.`odd tbl__changelog`"
    assert changelog_seq_base(0) == 1 << 32
    assert changelog_seq_base(6) == 7 << 32
    with pytest.raises(TableError, match="last_sequence_number=-1 must be an int >= 0"):
        changelog_seq_base(-1)


def test_columns_and_ddl() -> None:
    image = "STRUCT<`id`: int, `v`: string, `ts`: bigint>"
    assert changelog_columns(["id"], TYPES) == [
        ("id", "int"), ("before", image), ("after", image), ("_op", "STRING"),
        ("_seq", "BIGINT"), ("_source_pos", "STRING"), ("_commit_ts", "TIMESTAMP"),
    ]
    ddl = changelog_ddl("lake", "db.`odd t`", ["id"], TYPES, properties={"x": "it's"})
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS `lake`.`db`.`odd t__changelog` (\n")
    assert f"`before` {image}" in ddl and "PARTITIONED BY (days(`_commit_ts`))" in ddl
    assert "'format-version'='2'" in ddl and "'x'='it\\'s'" in ddl


@pytest.mark.parametrize(
    ("keys", "types", "message"),
    [
        (["before"], {"before": "int"}, "clash with the changelog columns"),
        (["id"], {"v": "int"}, "missing from column_types: id,"),
        (["id"], {"id": "int", "v": " "}, "empty types for: v;"),
    ],
)
def test_column_errors(keys: list[str], types: dict[str, str], message: str) -> None:
    with pytest.raises(TableError, match=message.replace("[", r"\[").replace("]", r"\]")):
        changelog_columns(keys, types)


def test_changelog_sql_renders_the_merge_clauses_in_order() -> None:
    sql = changelog_sql(Deduplicate("ts"), spec(), TYPES, seq_base=5, source_pos='{"p": 1}',
                        collapsed_view="collapsed")
    newer = "coalesce(s.`ts` >= t.`ts`, t.`ts` IS NULL)"
    stored = ("named_struct('id', CAST(t.`id` AS int), 'v', CAST(t.`v` AS string), "
              "'ts', CAST(t.`ts` AS bigint))")
    expected_after = [
        "WHEN t.`id` IS NULL AND NOT s.__icetide_del THEN named_struct('id', CAST(s.`id` AS int)",
        "WHEN t.`id` IS NULL THEN NULL",
        f"WHEN s.__icetide_del AND {newer} THEN NULL",
        f"WHEN NOT s.__icetide_del AND {newer} THEN named_struct('id', CAST(t.`id` AS int), "
        "'v', CAST(s.`v` AS string)",
        f"ELSE {stored}",
    ]
    positions = [sql.index(part) for part in expected_after]
    assert positions == sorted(positions)
    assert f"CASE WHEN t.`id` IS NOT NULL THEN {stored} END AS `before`" in sql
    assert "FROM `collapsed` AS s\n  LEFT JOIN `lake`.`db`.`t` AS t ON t.`id` = s.`id`" in sql
    number = "row_number() OVER (ORDER BY `id`, __icetide_pos)"
    # per-batch values as DECIMAL literals: Spark inlines BIGINT/TIMESTAMP literals into
    # the generated Java code, so they would compile the stage anew every batch
    assert f"CAST(CAST('5' AS DECIMAL(20,0)) + {number} AS BIGINT) AS `_seq`" in sql
    assert "'{\"p\": 1}' AS `_source_pos`" in sql
    assert "timestamp_micros(CAST(CAST('" in sql
    assert f"' AS DECIMAL(20,0)) + 0 * {number} AS BIGINT)) AS `_commit_ts`" in sql


def test_changelog_sql_commit_time_is_exact_to_the_microsecond() -> None:
    ts = dt.datetime(2026, 11, 25, 11, 30, 1, 123456, tzinfo=dt.UTC)
    sql = changelog_sql(Deduplicate("ts"), spec(), TYPES, seq_base=0, source_pos="p",
                        commit_ts=ts)
    assert f"CAST('{int(ts.timestamp()) * 1_000_000 + 123456}' AS DECIMAL(20,0))" in sql
    assert "THEN array('-U', '+U')" in sql and "NOT (`before` <=> `after`)" in sql
    assert "LATERAL VIEW posexplode(" in sql and "__icetide_x AS __icetide_pos, `_op`" in sql


def test_changelog_sql_embeds_collapse_and_engine_specifics() -> None:
    sql = changelog_sql(PartialUpdate("ts"), spec(), TYPES, seq_base=0, source_pos="p")
    assert "FROM (\nSELECT `id`, max_by(`v`" in sql  # collapse embedded
    assert "CAST(CASE WHEN coalesce(s.`ts` >= t.`ts`, t.`ts` IS NULL) THEN coalesce(" in sql
    first = changelog_sql(FirstRow(), spec(), TYPES, seq_base=0, source_pos="p")
    assert "WHEN t.`id` IS NULL THEN named_struct(" in first
    assert "WHEN MATCHED" not in first and first.count("WHEN t.`id` IS NULL") == 2


def test_changelog_sql_maps_and_commit_ts() -> None:
    types = {"id": "int", "v": "map<string, int>", "ts": "bigint"}
    ts = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    sql = changelog_sql(Deduplicate("ts"), spec(), types, seq_base=0, source_pos="p",
                        commit_ts=ts)
    assert "to_json(`before`) <=> to_json(`after`)" in sql
    assert f"CAST('{int(ts.timestamp()) * 1_000_000}' AS DECIMAL(20,0))" in sql


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"column_types": {"id": "int"}}, "must name exactly the MERGE columns"),
        ({"seq_base": -1}, "seq_base=-1 must be an int >= 0"),
        ({"commit_ts": dt.datetime(2024, 1, 1)}, "must be a timezone-aware datetime"),
    ],
)
def test_changelog_sql_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"column_types": TYPES, "seq_base": 0, "source_pos": "p", **kwargs}
    with pytest.raises(TableError, match=message):
        changelog_sql(Deduplicate("ts"), spec(), **args)  # type: ignore[arg-type]


def test_changelog_sql_prunes_the_target_with_the_key_filter() -> None:
    sql = changelog_sql(Deduplicate("ts"), spec(), TYPES, seq_base=0, source_pos="p",
                        collapsed_view="c", key_filter="t.`id` IN (1, 2)")
    assert "ON t.`id` = s.`id` AND t.`id` IN (1, 2)" in sql
    plain = changelog_sql(Deduplicate("ts"), spec(), TYPES, seq_base=0, source_pos="p",
                          collapsed_view="c")
    assert "ON t.`id` = s.`id`\n" in plain


def test_change_counts_as_of_a_snapshot_join_the_target_as_it_was() -> None:
    """After a MERGE, its parent snapshot is the state it applied to."""
    sql = change_counts_sql(Deduplicate("ts"), spec(), TYPES, collapsed_view="c", as_of=42)
    assert f"LEFT JOIN {T}.`snapshot_id_42` AS t ON" in sql
    assert "snapshot_id_" not in change_counts_sql(Deduplicate("ts"), spec(), TYPES)
    with pytest.raises(TableError, match="as_of='42' must be a snapshot id"):
        change_counts_sql(Deduplicate("ts"), spec(), TYPES, as_of="42")  # type: ignore[arg-type]
