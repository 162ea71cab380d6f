"""The generated collapse SELECTs and MERGE statements (no JVM).

Their behaviour on real Spark + Iceberg is covered by
tests/integration/tables/test_merge_engines_spark.py.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from icetide.errors import PipelineError
from icetide.tables.merge_engines import (
    Aggregation,
    Deduplicate,
    FirstRow,
    PartialUpdate,
    aggregation,
)
from icetide.tables.merge_sql import (
    DEL,
    MergeSpec,
    collapse_sql,
    compile_merge,
    merge_sql,
)

T = "`lake`.`db`.`t`"


def spec(columns: tuple[str, ...] = ("id", "a", "b", "ts"), **kw: str | None) -> MergeSpec:
    args: dict[str, str | None] = {"op_column": "_op", "ordinal_column": "_ord", **kw}
    return MergeSpec(T, "batch", ["id"], columns, **args)


def test_deduplicate_shape() -> None:
    sql = merge_sql(Deduplicate("ts"), spec())
    newer = "coalesce(s.`ts` >= t.`ts`, t.`ts` IS NULL)"
    assert sql.startswith(f"MERGE INTO {T} AS t\nUSING (\nSELECT `id`, `a`, `b`, `ts`, {DEL}")
    assert ("row_number() OVER (PARTITION BY `id` ORDER BY `ts` DESC NULLS LAST, "
            "__icetide_ord DESC NULLS LAST)") in sql
    assert "`_ord` AS __icetide_ord" in sql and "FROM `batch`" in sql
    assert f"WHEN MATCHED AND s.{DEL} AND {newer} THEN DELETE" in sql
    assert f"WHEN MATCHED AND NOT s.{DEL} AND {newer} THEN UPDATE SET\n  `a` = s.`a`" in sql
    assert (f"WHEN NOT MATCHED AND NOT s.{DEL} THEN INSERT (`id`, `a`, `b`, `ts`) "
            "VALUES (s.`id`, s.`a`, s.`b`, s.`ts`)") in sql
    assert "ON t.`id` = s.`id`" in sql


def test_op_values_are_checked_in_sql() -> None:
    sql = collapse_sql(Deduplicate("ts"), spec())
    assert "CASE WHEN `_op` IN ('+I', '+U') THEN FALSE WHEN `_op` IN ('-U', '-D') THEN TRUE" in sql
    assert "raise_error(concat('icetide: _op of batch must be +I, +U, -U, -D but is '" in sql
    assert f"WHERE {DEL} IS NOT NULL" in sql  # forces the check on every row


def test_without_op_column_everything_is_an_upsert() -> None:
    sql = merge_sql(Deduplicate(), spec(op_column=None))
    assert DEL not in sql
    assert "WHEN MATCHED THEN UPDATE SET" in sql and "WHEN NOT MATCHED THEN INSERT" in sql
    assert "ORDER BY __icetide_ord DESC NULLS LAST" in sql


@pytest.mark.parametrize(
    ("engine", "fragment"),
    [
        (Deduplicate("ts", on_delete="ignore"), f"WHERE NOT {DEL}"),
        (Deduplicate("ts", on_delete="error"),
         "rejects retractions but _op is ', `_op`, '; set on_delete=\\'remove\\' or "),
        (FirstRow(), f"WHERE NOT {DEL}"),
        (PartialUpdate(), "set on_delete=\\'ignore\\' or \\'remove\\' to accept them"),
        (Aggregation(), "set on_delete=\\'ignore\\' or \\'retract\\' to accept"),
    ],
)
def test_delete_policies(engine: Deduplicate, fragment: str) -> None:
    sql = merge_sql(engine, spec())
    assert fragment in sql
    assert "THEN DELETE" not in sql


def test_first_row_is_insert_only() -> None:
    sql = merge_sql(FirstRow("ts"), spec())
    assert "ORDER BY `ts` ASC NULLS FIRST, __icetide_ord ASC NULLS FIRST" in sql
    assert "WHEN MATCHED" not in sql
    assert sql.rstrip().endswith("VALUES (s.`id`, s.`a`, s.`b`, s.`ts`)")


def test_partial_update_shape() -> None:
    cols = ("id", "a", "b", "g", "c", "ts")
    sql = merge_sql(PartialUpdate("ts", {"g": ["b"]}), spec(cols))
    assert "max_by(`a`, struct(`ts`, __icetide_ord)) FILTER (WHERE `a` IS NOT NULL) AS `a`" in sql
    assert "max_by(`b`, struct(`g`, __icetide_ord)) FILTER (WHERE `g` IS NOT NULL) AS `b`" in sql
    assert "max(`g`) AS `g`" in sql and "max(`ts`) AS `ts`" in sql and "GROUP BY `id`" in sql
    newer = "coalesce(s.`ts` >= t.`ts`, t.`ts` IS NULL)"
    assert (f"`a` = CASE WHEN {newer} THEN coalesce(s.`a`, t.`a`) "
            "ELSE coalesce(t.`a`, s.`a`) END") in sql
    group = "s.`g` IS NOT NULL AND coalesce(s.`g` >= t.`g`, t.`g` IS NULL)"
    assert f"`b` = CASE WHEN {group} THEN s.`b` ELSE t.`b` END" in sql
    assert f"`g` = CASE WHEN {group} THEN s.`g` ELSE t.`g` END" in sql
    assert "`ts` = greatest(s.`ts`, t.`ts`)" in sql
    assert "WHEN MATCHED THEN UPDATE SET" in sql and "DELETE" not in sql


def test_partial_update_without_sequence_field_coalesces() -> None:
    sql = merge_sql(PartialUpdate(), spec())
    assert "`ts` = coalesce(s.`ts`, t.`ts`)" in sql
    assert "max_by(`a`, struct(__icetide_ord)) FILTER (WHERE `a` IS NOT NULL)" in sql


def test_partial_update_remove() -> None:
    sql = merge_sql(PartialUpdate("ts", on_delete="remove"), spec())
    order = "struct(`ts`, __icetide_ord)"
    assert (f"max(CASE WHEN {DEL} THEN {order} END) OVER (PARTITION BY `id`) "
            "AS __icetide_last_del") in sql
    assert f"(__icetide_last_del IS NULL OR {order} > __icetide_last_del)" in sql
    assert "FILTER (WHERE __icetide_alive AND `a` IS NOT NULL)" in sql
    assert f"max_by(`ts`, {order}) FILTER (WHERE {DEL}) AS __icetide_del_seq" in sql
    del_newer = "coalesce(s.__icetide_del_seq >= t.`ts`, t.`ts` IS NULL)"
    assert f"WHEN MATCHED AND s.{DEL} AND {del_newer} THEN DELETE" in sql
    assert f"CASE WHEN s.__icetide_reset AND {del_newer} THEN s.`a` ELSE" in sql


def test_aggregation_shape() -> None:
    cols = ("id", "v", "n", "lo", "hi", "name", "f", "lv", "fv", "ok", "any")
    eng = aggregation(v="sum", n="count", lo="min", hi="max", f="first_non_null",
                      lv="last_value", fv="first_value", ok="bool_and", any="bool_or")
    sql = merge_sql(eng, spec(cols))
    for batch in ["sum(`v`) AS `v`", "count(`n`) AS `n`", "min(`lo`) AS `lo`",
                  "max_by(`name`, struct(__icetide_ord)) FILTER (WHERE `name` IS NOT NULL)",
                  "min_by(`f`, struct(__icetide_ord)) FILTER (WHERE `f` IS NOT NULL)",
                  "max_by(`lv`, struct(__icetide_ord)) AS `lv`", "bool_or(`any`) AS `any`"]:
        assert batch in sql
    for merged in ["`v` = CASE WHEN t.`v` IS NULL THEN s.`v` WHEN s.`v` IS NULL THEN t.`v` "
                   "ELSE t.`v` + s.`v` END", "`n` = coalesce(t.`n`, 0) + s.`n`",
                   "`lo` = least(t.`lo`, s.`lo`)", "`hi` = greatest(t.`hi`, s.`hi`)",
                   "`name` = coalesce(s.`name`, t.`name`)", "`f` = coalesce(t.`f`, s.`f`)",
                   "`lv` = s.`lv`", "`fv` = t.`fv`", "ELSE t.`ok` AND s.`ok` END"]:
        assert merged in sql
    assert "WHEN MATCHED THEN UPDATE" in sql and "DELETE" not in sql


def test_aggregation_retract() -> None:
    sql = collapse_sql(Aggregation({"v": "sum", "n": "count"}, on_delete="retract"),
                       spec(("id", "v", "n", "name")))
    assert f"sum(CASE WHEN {DEL} THEN -`v` ELSE `v` END) AS `v`" in sql
    assert f"sum(CASE WHEN `n` IS NULL THEN 0 WHEN {DEL} THEN -1 ELSE 1 END) AS `n`" in sql
    assert f"FILTER (WHERE `name` IS NOT NULL AND NOT {DEL}) AS `name`" in sql


def test_aggregation_without_order_when_functions_are_order_free() -> None:
    sql = merge_sql(aggregation(a="sum", b="max", ts="min"), spec(ordinal_column=None))
    assert "__icetide_ord" not in sql
    with pytest.raises(PipelineError, match="pass ordinal_column="):
        merge_sql(aggregation(a="sum"), spec(ordinal_column=None))


def test_collapsed_view() -> None:
    sql = merge_sql("deduplicate", spec(), collapsed_view="db.`my collapsed`")
    assert "USING `db`.`my collapsed` AS s" in sql and "row_number" not in sql
    embedded = merge_sql({"engine": "deduplicate", "sequence_field": "ts"}, spec())
    assert embedded == merge_sql(Deduplicate("ts"), spec())
    assert collapse_sql(Deduplicate("ts"), spec()) in embedded


def test_odd_identifiers_are_quoted_everywhere() -> None:
    odd = MergeSpec("`lake`.`db`.`odd tbl`", "my view", ["the id", "k`2"],
                    ["the id", "k`2", "val ue", "seq-no"], "op col", "ord`x")
    sql = merge_sql(Deduplicate("seq-no"), odd)
    assert "ON t.`the id` = s.`the id` AND t.`k``2` = s.`k``2`" in sql
    assert "PARTITION BY `the id`, `k``2` ORDER BY `seq-no` DESC NULLS LAST" in sql
    assert "`ord``x` AS __icetide_ord" in sql and "CASE WHEN `op col` IN" in sql
    assert "FROM `my view`" in sql and "`val ue` = s.`val ue`" in sql
    assert "coalesce(s.`seq-no` >= t.`seq-no`, t.`seq-no` IS NULL)" in sql


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keys": []}, "no primary key columns"),
        ({"keys": ["zz"]}, "key column(s) zz are not among the columns"),
        ({"columns": ["id", "id"]}, "duplicate names"),
        ({"columns": ["id", "__icetide_x"]}, "reserved (prefix '__icetide_')"),
        ({"op_column": "a"}, "op_column 'a' must not be a table column"),
        ({"op_column": "x", "ordinal_column": "x"}, "op_column and ordinal_column are both"),
    ],
)
def test_spec_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"target": T, "source": "b", "keys": ["id"],
                               "columns": ["id", "a"], **kwargs}
    with pytest.raises(PipelineError) as err:
        MergeSpec(**args)  # type: ignore[arg-type]
    assert message in str(err.value) and T in str(err.value)


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (Deduplicate("nope"), "sequence_field 'nope' is not a non-key column"),
        (Deduplicate("id"), "sequence_field 'id' is not a non-key column"),
        (PartialUpdate(None, {"g": ["zz"]}), "sequence group field 'g' is not"),
        (aggregation(zz="sum"), "aggregated column 'zz' is not"),
        (FirstRow(), "has no sequence_field and the spec no ordinal_column"),
    ],
)
def test_engine_column_errors(engine: Deduplicate, message: str) -> None:
    with pytest.raises(PipelineError) as err:
        compile_merge(engine, spec(ordinal_column=None))
    assert message in str(err.value)


def test_declarative_core_imports_no_pyspark() -> None:
    code = (
        "import sys, icetide.tables.merge_sql, icetide.tables.changelog, icetide.tables.sql;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'));"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_column_types_leave_unchanged_rows_alone() -> None:
    """With the target's column types, a matched row the update would rewrite as it is
    is skipped (no delete file, no new row); maps compare as JSON."""
    types = {"id": "string", "a": "bigint", "b": "map<string,int>", "ts": "bigint"}
    sql = merge_sql(aggregation(a="sum", b="last_non_null", ts="max"), spec(op_column=None),
                    column_types=types)
    stored = ("named_struct('a', CAST(t.`a` AS bigint), 'b', CAST(t.`b` AS map<string,int>), "
              "'ts', CAST(t.`ts` AS bigint))")
    assert f"WHEN MATCHED AND NOT (to_json({stored}) <=> to_json(named_struct('a', " in sql
    assert "'ts', CAST(greatest(t.`ts`, s.`ts`) AS bigint)))) THEN UPDATE SET" in sql
    plain = merge_sql(Deduplicate("ts"), spec(), column_types={**types, "b": "int"})
    assert (f"WHEN MATCHED AND NOT s.{DEL} AND coalesce(s.`ts` >= t.`ts`, t.`ts` IS NULL) "
            "AND NOT (named_struct('a', CAST(t.`a` AS bigint), 'b', CAST(t.`b` AS int), "
            "'ts', CAST(t.`ts` AS bigint)) <=> named_struct('a', CAST(s.`a` AS bigint)") in plain
    assert "NOT (named_struct" not in merge_sql(Deduplicate("ts"), spec())


def test_replacing_wraps_every_engine() -> None:
    """Recomputed rows replace or delete whatever the engine; the rest merge as usual."""
    for engine in (Deduplicate("ts"), FirstRow(), aggregation(a="sum"),
                   PartialUpdate("ts", remove_empty=True)):
        text = merge_sql(engine, spec(replacing=True), collapsed_view="c")  # type: ignore[arg-type]
        assert any(f"WHEN MATCHED AND {g}s.__icetide_gone" in text for g in ("", "("))
        assert "CASE WHEN s.__icetide_repl THEN s.`a`" in text
        assert "WHEN NOT MATCHED AND ((s.__icetide_repl AND NOT s.__icetide_gone)" in text


def test_remove_empty_deletes_rows_left_without_values() -> None:
    text = merge_sql(PartialUpdate("ts", remove_empty=True), spec(op_column=None))
    assert "THEN DELETE" in text and ") IS NULL" in text
    assert "NOT (s.`a` IS NULL AND s.`b` IS NULL)" in text


@pytest.mark.parametrize("engine", [
    Deduplicate("ts"), Deduplicate(None, on_delete="ignore"), FirstRow("ts"),
    PartialUpdate("ts", sequence_groups={"g": ["a"]}, remove_empty=True),
    Aggregation({"a": "sum", "b": "last_non_null"}, on_delete="retract"),
    Aggregation({"a": "sum", "b": "max"}),
], ids=lambda e: e.name)
@pytest.mark.parametrize("replacing", [False, True])
def test_every_generated_merge_parses_as_one_merge(engine: object, replacing: bool) -> None:
    """The MERGE text is assembled from f-strings (docs/architecture.md says why): a SQL
    parser reads each one back as a single MERGE statement, whatever the engine."""
    import sqlglot
    from sqlglot import exp

    columns = ("id", "a", "b", "ts", "g") if isinstance(engine, PartialUpdate) else None
    made = spec(columns) if columns else spec()
    sql = merge_sql(engine, dataclasses.replace(made, replacing=replacing))  # type: ignore[arg-type]
    parsed = sqlglot.parse(sql, read="spark")
    assert len(parsed) == 1 and isinstance(parsed[0], exp.Merge)


def test_an_aggregation_sequence_group_takes_the_newest_rows_values() -> None:
    eng = aggregation(v="sum", sequence_groups={"s": ["a", "b"]})
    sql = merge_sql(eng, spec(("id", "v", "s", "a", "b"), ordinal_column=None))
    assert "max(`s`) AS `s`" in sql
    assert "max_by(`a`, struct(`s`, NULL)) FILTER (WHERE `s` IS NOT NULL) AS `a`" in sql
    assert ("`b` = CASE WHEN s.`s` IS NOT NULL AND coalesce(s.`s` >= t.`s`, TRUE) THEN s.`b` "
            "ELSE t.`b` END") in sql
    assert "`s` = greatest(t.`s`, s.`s`)" in sql
    with pytest.raises(PipelineError, match="group 's' column 'c' is not a non-key column"):
        merge_sql(aggregation(sequence_groups={"s": ["c"]}), spec(("id", "s", "a")))
