"""Merge engines and the changelog on real Spark + Iceberg (merge-on-read v2 tables).

Every batch goes through the flow loop's order: collapse → cached view → changelog rows
(appended to the companion table) → MERGE. After each batch the changelog rows must be
exactly the before/after difference of the table.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icetide.tables.changelog import (
    changelog_ddl,
    changelog_seq_base,
    changelog_sql,
    changelog_table_name,
)
from icetide.tables.merge_engines import (
    Aggregation,
    Deduplicate,
    FirstRow,
    MergeEngine,
    PartialUpdate,
    aggregation,
)
from icetide.tables.merge_sql import GONE, REPL, MergeSpec, collapse_sql, merge_sql
from icetide.tables.sql import quote_ident, quote_table

pytestmark = pytest.mark.spark

NS = "mt_engines"
_counter = itertools.count()
MOR = (
    "'format-version'='2', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
)


class Table:
    """A primary-key table, its changelog, and a batch runner following the flow loop."""

    def __init__(
        self, spark: SparkSession, engine: MergeEngine, columns: Mapping[str, str],
        keys: Sequence[str], name: str | None = None,
    ) -> None:
        self.spark, self.engine, self.keys = spark, engine, list(keys)
        self.columns = dict(columns)
        self.name = name or f"{NS}.t{next(_counter)}"
        self.ident = quote_table("lake", self.name)
        self.batches = 0
        cols = ", ".join(f"{quote_ident(c)} {t}" for c, t in self.columns.items())
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{NS}")
        spark.sql(
            f"CREATE TABLE {self.ident} ({cols}) USING iceberg "
            f"PARTITIONED BY (bucket(4, {quote_ident(self.keys[0])})) TBLPROPERTIES ({MOR})"
        )
        spark.sql(changelog_ddl("lake", self.name, self.keys, self.columns))
        self.changelog = quote_table("lake", changelog_table_name(self.name))

    def state(self) -> dict[tuple[Any, ...], dict[str, Any]]:
        rows = self.spark.sql(f"SELECT * FROM {self.ident}").collect()
        out = {tuple(r[k] for k in self.keys): r.asDict() for r in rows}
        assert len(out) == len(rows), "duplicate keys in the table"
        return out

    def run(self, rows: Sequence[dict[str, Any]], extra: Mapping[str, str]) -> list[dict[str, Any]]:
        """Merge ``rows`` (with extra source columns ``extra``; with the replacing flags,
        rows already collapsed); returns the changelog rows."""
        schema = ", ".join(
            f"{quote_ident(c)} {t}" for c, t in {**self.columns, **extra}.items()
        )
        self.spark.createDataFrame(
            [tuple(r.get(c) for c in [*self.columns, *extra]) for r in rows], schema
        ).createOrReplaceTempView("mt_batch")
        spec = MergeSpec(
            self.ident, "mt_batch", self.keys, list(self.columns),
            op_column="_op" if "_op" in extra else None,
            ordinal_column="_ord" if "_ord" in extra else None,
            replacing=REPL in extra,
        )
        if spec.replacing:  # the sink collapses the parts itself; here they come collapsed
            self.spark.table("mt_batch").cache().createOrReplaceTempView("mt_collapsed")
            return self._merge(spec, "mt_collapsed")
        return self._merge(spec, None)

    def _merge(self, spec: MergeSpec, collapsed_view: str | None) -> list[dict[str, Any]]:
        if collapsed_view is None:
            collapsed = self.spark.sql(collapse_sql(self.engine, spec)).cache()
            collapsed.createOrReplaceTempView("mt_collapsed")
        else:
            collapsed = self.spark.table(collapsed_view)
        self.batches += 1
        before = self.state()
        changes = self.spark.sql(changelog_sql(
            self.engine, spec, self.columns, seq_base=changelog_seq_base(self.batches),
            source_pos=f'{{"batch": {self.batches}}}', collapsed_view="mt_collapsed",
        ))
        changes.writeTo(self.changelog).append()  # appended BEFORE the MERGE
        self.spark.sql(merge_sql(self.engine, spec, collapsed_view="mt_collapsed"))
        collapsed.unpersist()
        logged = [r.asDict(recursive=True) for r in self.spark.sql(
            f"SELECT * FROM {self.changelog} WHERE _source_pos = '{{\"batch\": {self.batches}}}' "
            "ORDER BY _seq").collect()]
        assert_changelog_matches(self.keys, before, self.state(), logged)
        return logged

    def rows(self) -> dict[Any, dict[str, Any]]:
        return {k[0] if len(k) == 1 else k: v for k, v in self.state().items()}


def assert_changelog_matches(
    keys: Sequence[str],
    before: Mapping[tuple[Any, ...], dict[str, Any]],
    after: Mapping[tuple[Any, ...], dict[str, Any]],
    logged: Sequence[dict[str, Any]],
) -> None:
    Image = dict[str, Any] | None
    expected: list[tuple[str, tuple[Any, ...], Image, Image]] = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b is None and a is not None:
            expected.append(("+I", key, None, a))
        elif b is not None and a is None:
            expected.append(("-D", key, b, None))
        elif b != a:
            expected += [("-U", key, b, a), ("+U", key, b, a)]
    got = [(r["_op"], tuple(r[k] for k in keys), r["before"], r["after"]) for r in logged]
    assert got == expected
    seqs = [r["_seq"] for r in logged]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


@pytest.fixture(scope="module")
def sp(spark: SparkSession) -> Iterator[SparkSession]:
    yield spark
    for row in spark.sql(f"SHOW TABLES IN lake.{NS}").collect():
        spark.sql(f"DROP TABLE {quote_table('lake', NS + '.' + quote_ident(row.tableName))}")
    spark.sql(f"DROP NAMESPACE IF EXISTS lake.{NS}")  # the hadoop catalog has no CASCADE


OPS = {"_op": "string", "_ord": "bigint"}


def r(key: int, ord_: int, op: str = "+I", **values: Any) -> dict[str, Any]:
    return {"id": key, "_ord": ord_, "_op": op, **values}


def test_deduplicate_sequence_deletes_and_replays(sp: SparkSession) -> None:
    t = Table(sp, Deduplicate("ts"), {"id": "int", "v": "string", "ts": "bigint"}, ["id"])
    t.run([
        r(1, 0, v="a", ts=1), r(1, 1, "+U", v="b", ts=3), r(1, 2, "+U", v="c", ts=2),
        r(2, 3, v="x", ts=5), r(3, 4, v="y", ts=1), r(3, 5, "-U", v="y", ts=1),
        r(3, 6, "+U", v="y2", ts=1),
    ], OPS)
    assert t.rows() == {1: {"id": 1, "v": "b", "ts": 3}, 2: {"id": 2, "v": "x", "ts": 5},
                        3: {"id": 3, "v": "y2", "ts": 1}}
    logged = t.run([
        r(1, 0, "+U", v="older", ts=2),  # out of order: ignored
        r(2, 1, "-D", v="x", ts=6),  # delete wins (newer)
        r(3, 2, "+U", v=None, ts=1),  # equal sequence: later arrival wins; null kept as null
        r(4, 3, v="n", ts=None), r(5, 4, "-D", ts=9),  # null sequence insert; delete of nothing
    ], OPS)
    assert t.rows() == {1: {"id": 1, "v": "b", "ts": 3}, 3: {"id": 3, "v": None, "ts": 1},
                        4: {"id": 4, "v": "n", "ts": None}}
    assert [x["_op"] for x in logged] == ["-D", "-U", "+U", "+I"]
    t.run([r(4, 0, "-D", ts=None), r(1, 1, "-D", ts=2)], OPS)  # null>=null deletes; older not
    assert set(t.rows()) == {1, 3}
    # merge-on-read: the MERGEs wrote position delete files, not rewritten data files
    assert sp.sql(f"SELECT count(*) AS n FROM {t.ident}.`delete_files`").collect()[0]["n"] > 0


def test_deduplicate_without_op_or_sequence_uses_ordinal(sp: SparkSession) -> None:
    t = Table(sp, Deduplicate(), {"id": "int", "v": "string"}, ["id"])
    t.run([{"id": 1, "v": "a", "_ord": 2}, {"id": 1, "v": "b", "_ord": 1}], {"_ord": "bigint"})
    t.run([{"id": 1, "v": "c", "_ord": 0}, {"id": 2, "v": "d", "_ord": 1}], {"_ord": "bigint"})
    assert t.rows() == {1: {"id": 1, "v": "c"}, 2: {"id": 2, "v": "d"}}


def test_op_column_errors_name_the_value(sp: SparkSession) -> None:
    t = Table(sp, Deduplicate("ts", on_delete="error"),
              {"id": "int", "v": "string", "ts": "bigint"}, ["id"])
    with pytest.raises(Exception, match=r"_op of mt_batch must be \+I, \+U, -U, -D but is X"):
        t.run([r(1, 0, "X", v="a", ts=1)], OPS)
    with pytest.raises(Exception, match="rejects retractions but _op is -D"):
        t.run([r(1, 0, "-D", v="a", ts=1)], OPS)


def test_partial_update_row_sequence(sp: SparkSession) -> None:
    cols = {"id": "int", "a": "string", "b": "string", "ts": "bigint"}
    t = Table(sp, PartialUpdate("ts"), cols, ["id"])
    t.run([r(1, 0, a="a1", ts=1), r(1, 1, b="b1", ts=2), r(1, 2, a="a0", ts=0),
           r(2, 3, b="x", ts=10)], OPS)
    assert t.rows()[1] == {"id": 1, "a": "a1", "b": "b1", "ts": 2}
    t.run([r(1, 0, b="b2", ts=5), r(1, 1, a="late", b="lateb", ts=3),
           r(2, 2, a="fill", b="y", ts=1)], OPS)  # key 2: older row only fills nulls
    assert t.rows() == {1: {"id": 1, "a": "late", "b": "b2", "ts": 5},
                        2: {"id": 2, "a": "fill", "b": "x", "ts": 10}}
    t.run([r(1, 0, a=None, b=None, ts=7)], OPS)  # all-null update: only the sequence moves
    assert t.rows()[1] == {"id": 1, "a": "late", "b": "b2", "ts": 7}
    with pytest.raises(Exception, match="on_delete='ignore' or 'remove'"):
        t.run([r(1, 0, "-D", ts=9)], OPS)


def test_partial_update_sequence_groups(sp: SparkSession) -> None:
    cols = {"id": "int", "a": "string", "ga": "bigint", "b": "string", "gb": "bigint",
            "c": "string"}
    t = Table(sp, PartialUpdate(None, {"ga": ["a"], "gb": ["b"]}), cols, ["id"])
    t.run([r(1, 0, a="a1", ga=1), r(1, 1, b="b1", gb=1, c="c1"),
           r(1, 2, a="a5", ga=5), r(1, 3, a="a3", ga=3)], OPS)
    assert t.rows()[1] == {"id": 1, "a": "a5", "ga": 5, "b": "b1", "gb": 1, "c": "c1"}
    t.run([r(1, 0, a=None, ga=6, b="bold", gb=0, c=None)], OPS)
    # group a newer → replaced as a unit (null included); group b older → kept; c: null keeps
    assert t.rows()[1] == {"id": 1, "a": None, "ga": 6, "b": "b1", "gb": 1, "c": "c1"}


def test_partial_update_remove_on_delete(sp: SparkSession) -> None:
    cols = {"id": "int", "a": "string", "b": "string", "ts": "bigint"}
    t = Table(sp, PartialUpdate("ts", on_delete="remove"), cols, ["id"])
    t.run([r(1, 0, a="a_old", ts=1), r(2, 1, a="two", ts=1), r(3, 2, a="three", ts=5)], OPS)
    t.run([
        r(1, 0, "+U", a="x", ts=2), r(1, 1, "-D", ts=3), r(1, 2, "+I", b="y", ts=4),  # reset
        r(2, 3, "+U", b="b", ts=2), r(2, 4, "-D", ts=3),  # deleted
        r(3, 5, "-D", ts=4),  # older than the stored row: ignored
    ], OPS)
    assert t.rows() == {1: {"id": 1, "a": None, "b": "y", "ts": 4},
                        3: {"id": 3, "a": "three", "b": None, "ts": 5}}


def test_aggregation_functions(sp: SparkSession) -> None:
    cols = {"id": "int", "views": "bigint", "cnt": "bigint", "lo": "int", "hi": "int",
            "name": "string", "first": "string", "lastv": "string"}
    eng = aggregation(views="sum", cnt="count", lo="min", hi="max", first="first_non_null",
                      lastv="last_value")
    t = Table(sp, eng, cols, ["id"])
    t.run([r(1, 0, views=1, cnt=1, lo=5, hi=5, name="n1", first=None, lastv="l1"),
           r(1, 1, views=2, cnt=None, lo=3, hi=9, name=None, first="f1", lastv=None),
           r(2, 2, views=None, cnt=7, lo=None, hi=None, name="m", first="g", lastv="z")], OPS)
    assert t.rows()[1] == {"id": 1, "views": 3, "cnt": 1, "lo": 3, "hi": 9, "name": "n1",
                           "first": "f1", "lastv": None}
    assert t.rows()[2]["views"] is None
    t.run([r(1, 0, views=10, cnt=0, lo=4, hi=1, name="n2", first="f2", lastv="l2"),
           r(2, 1, views=4, cnt=None, lo=1, hi=2, name=None, first="h", lastv=None)], OPS)
    assert t.rows() == {
        1: {"id": 1, "views": 13, "cnt": 2, "lo": 3, "hi": 9, "name": "n2", "first": "f1",
            "lastv": "l2"},
        2: {"id": 2, "views": 4, "cnt": 1, "lo": 1, "hi": 2, "name": "m", "first": "g",
            "lastv": None},
    }
    with pytest.raises(Exception, match="on_delete='ignore' or 'retract'"):
        t.run([r(1, 0, "-U", views=1)], OPS)


def test_aggregation_retract_sum_and_count(sp: SparkSession) -> None:
    cols = {"id": "int", "views": "bigint", "cnt": "bigint", "name": "string"}
    t = Table(sp, Aggregation({"views": "sum", "cnt": "count"}, on_delete="retract"), cols, ["id"])
    t.run([r(1, 0, views=5, cnt=1, name="a"), r(1, 1, views=7, cnt=1, name="b")], OPS)
    t.run([r(1, 0, "-U", views=7, cnt=1, name="b"), r(1, 1, "+U", views=8, cnt=1, name="c"),
           r(1, 2, "-D", views=5, cnt=1, name="a")], OPS)
    assert t.rows()[1] == {"id": 1, "views": 8, "cnt": 1, "name": "c"}


def test_aggregation_sequence_group_follows_its_newest_row(sp: SparkSession) -> None:
    cols = {"id": "int", "views": "bigint", "s": "bigint", "name": "string", "p": "int"}
    t = Table(sp, aggregation(views="sum", sequence_groups={"s": ["name", "p"]}), cols, ["id"])
    t.run([r(1, 0, views=1, s=5, name="five", p=5), r(1, 1, views=1, s=3, name="three", p=3),
           r(1, 2, views=1, s=None, name=None, p=None)], OPS)
    assert t.rows()[1] == {"id": 1, "views": 3, "s": 5, "name": "five", "p": 5}
    t.run([r(1, 0, views=1, s=4, name="late", p=4)], OPS)  # older: the group stays
    assert t.rows()[1] == {"id": 1, "views": 4, "s": 5, "name": "five", "p": 5}
    t.run([r(1, 0, views=1, s=9, name="nine", p=None)], OPS)  # newer: the whole group moves
    assert t.rows()[1] == {"id": 1, "views": 5, "s": 9, "name": "nine", "p": None}


def test_first_row(sp: SparkSession) -> None:
    t = Table(sp, FirstRow(), {"id": "int", "v": "string"}, ["id"])
    logged = t.run([r(1, 1, v="second"), r(1, 0, v="first"), r(2, 2, "-D", v="gone")], OPS)
    assert [x["_op"] for x in logged] == ["+I"]
    t.run([r(1, 0, v="third"), r(2, 1, v="new")], OPS)
    assert t.rows() == {1: {"id": 1, "v": "first"}, 2: {"id": 2, "v": "new"}}


def test_odd_identifiers_and_composite_key(sp: SparkSession) -> None:
    cols = {"the id": "int", "k`2": "string", "val ue": "string", "seq-no": "bigint"}
    t = Table(sp, Deduplicate("seq-no"), cols, ["the id", "k`2"], name=f"{NS}.`odd tbl`")
    extra = {"op col": "string", "ord`x": "bigint"}
    spec_rows = [
        {"the id": 1, "k`2": "a", "val ue": "v1", "seq-no": 1, "op col": "+I", "ord`x": 0},
        {"the id": 1, "k`2": "a", "val ue": "v2", "seq-no": 2, "op col": "+U", "ord`x": 1},
        {"the id": 1, "k`2": "b", "val ue": "it's \\ odd", "seq-no": 1, "op col": "+I",
         "ord`x": 2},
    ]
    # The Table helper names the op/ordinal columns _op/_ord; build this spec by hand.
    schema = ", ".join(f"{quote_ident(c)} {ty}" for c, ty in {**cols, **extra}.items())
    sp.createDataFrame([tuple(x.values()) for x in spec_rows], schema) \
        .createOrReplaceTempView("mt_odd_batch")
    spec = MergeSpec(t.ident, "mt_odd_batch", t.keys, list(cols), "op col", "ord`x")
    changes = sp.sql(changelog_sql(t.engine, spec, cols, seq_base=0, source_pos="p"))
    assert sorted(x["_op"] for x in changes.collect()) == ["+I", "+I"]
    changes.writeTo(t.changelog).append()
    sp.sql(merge_sql(t.engine, spec))
    assert t.rows() == {
        (1, "a"): {"the id": 1, "k`2": "a", "val ue": "v2", "seq-no": 2},
        (1, "b"): {"the id": 1, "k`2": "b", "val ue": "it's \\ odd", "seq-no": 1},
    }


def test_partial_update_remove_empty(sp: SparkSession) -> None:
    """A row whose every group was cleared is deleted, never inserted empty."""
    cols = {"id": "int", "a": "string", "ga": "bigint", "b": "string", "gb": "bigint"}
    t = Table(sp, PartialUpdate(None, {"ga": ["a"], "gb": ["b"]}, remove_empty=True), cols, ["id"])
    t.run([r(1, 0, a="a1", ga=1), r(1, 1, b="b1", gb=1), r(2, 2, a="a2", ga=1),
           r(3, 3, a=None, ga=1)], OPS)
    assert set(t.rows()) == {1, 2}  # key 3 arrived empty: not inserted
    t.run([r(1, 0, a=None, ga=2), r(2, 1, a=None, ga=2)], OPS)
    assert t.rows() == {1: {"id": 1, "a": None, "ga": 2, "b": "b1", "gb": 1}}


REPLACING = {REPL: "boolean", GONE: "boolean"}


def test_replacing_overrides_any_engine(sp: SparkSession) -> None:
    """Recomputed rows replace the stored row whatever the engine; gone keys are deleted;
    the other rows merge with the engine (here: sums)."""
    cols = {"id": "int", "n": "bigint", "hi": "bigint"}
    t = Table(sp, aggregation(n="sum", hi="max"), cols, ["id"])
    t.run([{"id": 1, "n": 5, "hi": 9}, {"id": 2, "n": 1, "hi": 1},
           {"id": 3, "n": 2, "hi": 2}], {})

    def row(key: int, n: int | None, hi: int | None, repl: bool, gone: bool) -> dict[str, Any]:
        return {"id": key, "n": n, "hi": hi, REPL: repl, GONE: gone}

    t.run([row(1, 3, 4, True, False),  # recomputed: replaces (max goes down)
           row(2, 2, 7, False, False),  # the usual increment: summed, max kept
           row(3, None, None, True, True),  # gone
           row(4, 1, 1, True, False)], REPLACING)  # recomputed, new
    assert t.rows() == {1: {"id": 1, "n": 3, "hi": 4}, 2: {"id": 2, "n": 3, "hi": 7},
                        4: {"id": 4, "n": 1, "hi": 1}}
