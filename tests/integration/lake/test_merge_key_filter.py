"""MergeSink's key predicate on real Spark + Iceberg: same result as the plain MERGE, with
the target scan filtered by the batch's keys (composite keys of every supported type)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icetide.flows.timing import JobCounter
from icetide.lake import key_filter as kf
from icetide.lake.sinks import MergeSink
from icetide.model.markers import Marker
from icetide.tables.merge_engines import deduplicate
from icetide.tables.merge_sql import MergeSpec, merge_sql

pytestmark = pytest.mark.spark

NS = "mt_keyfilter"
_names = itertools.count()
COLUMNS = "k BIGINT NOT NULL, s STRING NOT NULL, d DATE NOT NULL, x DECIMAL(10,2) NOT NULL, " \
          "v STRING, _cdc_pos DECIMAL(38,0)"
KEYS = ("k", "s", "d", "x")
STRINGS = ["a", "it's", "back\\slash", "ü OR 😀"]


@pytest.fixture(scope="module")
def sp(spark: SparkSession) -> Iterator[SparkSession]:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{NS}")
    yield spark
    for row in spark.sql(f"SHOW TABLES IN lake.{NS}").collect():
        spark.sql(f"DROP TABLE lake.{NS}.{row.tableName}")


def _key(i: int) -> tuple[Any, ...]:
    return (i - 20, STRINGS[i % 4], date(2024, 1, 1 + i % 28), Decimal(i % 7) / 4)


def _table(spark: SparkSession) -> str:
    ident = f"lake.{NS}.t{next(_names)}"
    spark.sql(f"CREATE TABLE {ident} ({COLUMNS}) USING iceberg PARTITIONED BY (bucket(4, k)) "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
              "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')")
    rows = [(*_key(i), f"v{i}", Decimal(10)) for i in range(40)]
    spark.createDataFrame(rows, COLUMNS).writeTo(ident).append()
    return ident


def _batch(spark: SparkSession) -> tuple[Any, dict[tuple[Any, ...], str]]:
    """+U of 0-4 (seq 11), a stale +U of 5 (seq 9: ignored), -D of 6-7, +I of 100-102."""
    rows = [(*_key(i), f"new{i}", Decimal(11), "+U") for i in range(5)]
    rows += [(*_key(5), "stale", Decimal(9), "+U")]
    rows += [(*_key(i), None, Decimal(11), "-D") for i in (6, 7)]
    rows += [(*_key(i), f"ins{i}", Decimal(11), "+I") for i in (100, 101, 102)]
    expected = {_key(i): f"v{i}" for i in range(40) if i not in (6, 7)}
    expected.update({_key(i): f"new{i}" for i in range(5)})
    expected.update({_key(i): f"ins{i}" for i in (100, 101, 102)})
    return spark.createDataFrame(rows, COLUMNS + ", _op STRING"), expected


@pytest.mark.parametrize("limit", [20_000, 1])
def test_merge_with_key_filter_gives_the_plain_result(
        sp: SparkSession, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr(kf, "IN_LIST_LIMIT", limit)  # 1: the batch is a range (BETWEEN)
    ident = _table(sp)
    batch, expected = _batch(sp)
    sink = MergeSink(deduplicate("_cdc_pos", on_delete="remove"), KEYS, op_column="_op")
    sink.write(sp, batch, ident, Marker("f", {"s": 0}, {"s": 1}, rows=10).to_summary(),
               frozenset())
    got = {tuple(r[k] for k in KEYS): r["v"] for r in sp.table(ident).collect()}
    assert got == expected


def test_key_filter_reaches_the_target_scan(sp: SparkSession) -> None:
    ident = _table(sp)
    batch, _ = _batch(sp)
    types = {f.name: f.dataType.simpleString() for f in sp.table(ident).schema.fields}
    in_list = kf.probe_keys(batch, KEYS, types).predicate
    assert in_list is not None and "t.`k` IN (-20L, -19L" in in_list
    assert "t.`s` IN ('a', 'back\\\\slash', 'it\\'s', 'ü OR 😀')" in in_list
    assert "t.`x` IN (CAST('0.00' AS DECIMAL(10,2))" in in_list
    ranges = kf.probe_keys(batch, KEYS, types, limit=1).predicate
    assert ranges is not None and "t.`k` BETWEEN -20L AND 82L" in ranges
    assert kf.probe_keys(batch.selectExpr("CAST(k AS INT) AS k"), ["k"], types).predicate is None

    batch.createOrReplaceTempView("mt_kf_batch")
    spec = MergeSpec(ident, "mt_kf_batch", KEYS, [f.name for f in sp.table(ident).schema.fields],
                     op_column="_op")
    statement = merge_sql(deduplicate("_cdc_pos", on_delete="remove"), spec, key_filter=in_list)
    plan = sp.sql(f"EXPLAIN {statement}").collect()[0][0]
    scan = next(line for line in plan.splitlines() if "BatchScan" in line)
    for pushed in ("filters=k IN (", "s IN (", "d IN (", "x IN ("):
        assert pushed in scan, scan


def _jobs_of(spark: SparkSession, run: Callable[[], kf.KeyProbe]) -> tuple[kf.KeyProbe, int]:
    jobs = JobCounter(spark, "probe")
    try:
        return run(), jobs.count()
    finally:
        jobs.close()


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_batch_within_the_limit_is_probed_in_one_job(sp: SparkSession,
                                                        partitions: int) -> None:
    ident = _table(sp)
    batch, _ = _batch(sp)
    batch = sp.createDataFrame(batch.collect(), batch.schema).repartition(partitions).persist()
    types = {f.name: f.dataType.simpleString() for f in sp.table(ident).schema.fields}
    try:
        batch.count()
        probe, jobs = _jobs_of(sp, lambda: kf.probe_keys(batch, KEYS, types))
        exact, _ = _jobs_of(sp, lambda: kf.probe_keys(batch, KEYS, types, limit=11))
        past, past_jobs = _jobs_of(sp, lambda: kf.probe_keys(batch, KEYS, types, limit=10))
    finally:
        batch.unpersist()
    assert probe.rows == exact.rows == past.rows == 11 and jobs == 1
    assert probe.predicate == exact.predicate and "t.`k` IN (-20L" in str(probe.predicate)
    assert "t.`k` BETWEEN -20L AND 82L" in str(past.predicate) and past_jobs == 2


def test_probing_a_new_batch_of_the_same_shape_compiles_no_code(sp: SparkSession) -> None:
    # a LIMIT in the plan would be new Java source per batch (docs/stack.md)
    ident = _table(sp)
    types = {f.name: f.dataType.simpleString() for f in sp.table(ident).schema.fields}
    metrics = sp.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics  # type: ignore[union-attr]
    compiles = metrics.METRIC_COMPILATION_TIME()
    seen = []
    for _ in range(3):  # each a new batch frame, as each micro-batch is
        batch, _ = _batch(sp)
        batch = batch.persist()
        try:
            before = compiles.getCount()
            assert kf.probe_keys(batch, KEYS, types).rows == 11
            seen.append(compiles.getCount() - before)
        finally:
            batch.unpersist()
    assert seen[1:] == [0, 0], seen


@pytest.mark.parametrize("limit", [None, 5])  # the listing and the aggregating path
def test_flagged_rows_are_counted_in_the_same_pass(sp: SparkSession, limit: int | None) -> None:
    ident = _table(sp)
    batch, _ = _batch(sp)
    flagged = batch.selectExpr("*", "_op = '-D' AS retract").persist()
    types = {f.name: f.dataType.simpleString() for f in sp.table(ident).schema.fields}
    try:
        probe = kf.probe_keys(flagged, KEYS, types, limit, flag="retract")
        unflagged = kf.probe_keys(flagged, KEYS, types, limit)
    finally:
        flagged.unpersist()
    assert (probe.rows, probe.flagged) == (11, 2)
    assert unflagged.flagged == 0 and unflagged.predicate == probe.predicate
