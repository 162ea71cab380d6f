"""The generic flow loop on real Kafka (Tansu), real Spark and real Iceberg tables."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession

from icetide.config import KafkaConfig
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.engine.reads import read_json
from icetide.flows.context import BatchContext
from icetide.flows.loop import BatchResult, Flow, FlowLoop
from icetide.flows.sizing import FLOOR
from icetide.flows.stats import Stats
from icetide.lake import commit
from icetide.lake.dlq import ensure_dlq_table
from icetide.lake.sinks import AppendSink, MergeSink, Props, Sink, WriteResult
from icetide.model.markers import Marker
from icetide.sources.kafka import KafkaSource
from icetide.tables.ddl import APPEND_TABLE_PROPERTIES, create_table_sql
from icetide.tables.merge_engines import first_row
from tests.brokers import BOTH

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SCHEMA = ("cookieId string, expendTime int, webpageId int, uid string, productId string, "
          "updateTime bigint")
_names = itertools.count()


@pytest.fixture(scope="module")
def loop_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with EmbeddedBroker(None, tmp_path_factory.mktemp("broker")) as broker:
        yield broker.bootstrap


def _tables(spark: SparkSession, name: str) -> tuple[str, str]:
    target, dlq = f"lake.flowtest.{name}", f"lake.flowtest.{name}_dlq"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.flowtest")
    cols = [(c.split()[0], c.split()[1]) for c in SCHEMA.split(", ")]
    cols += [("_kafka_topic", "string"), ("_kafka_partition", "int"),
             ("_kafka_offset", "bigint"), ("_kafka_ts", "timestamp")]
    spark.sql(create_table_sql(target, cols, properties=APPEND_TABLE_PROPERTIES))
    ensure_dlq_table(spark, dlq)
    return target, dlq


def _flow(name: str, topic: str, bootstrap: str, target: str, dlq: str,
          sink: Sink | None = None, max_records: int | None = 700) -> Flow:
    src = KafkaSource(topic, KafkaConfig(bootstrap=bootstrap), retry_patience=20)

    def transform(ctx: BatchContext) -> DataFrame:
        return read_json("clicks", schema=SCHEMA, dead_letter=dlq,
                         required=["uid", "productId", "updateTime"])

    return Flow(name=name, target=target, sources={src.key: src}, transform=transform,
                sink=sink or AppendSink(), side_tables=(dlq,), max_records=max_records,
                aliases={"clicks": src.key})


def _offsets(spark: SparkSession, table: str, topic_col: str = "_kafka_topic",
             part_col: str = "_kafka_partition",
             off_col: str = "_kafka_offset") -> list[tuple[str, int, int]]:
    rows = spark.sql(f"SELECT {topic_col}, {part_col}, {off_col} FROM {table}").collect()
    return sorted((r[0], r[1], r[2]) for r in rows)


@BOTH
def test_batches_commit_rows_dead_letters_and_positions(
        spark: SparkSession, broker: str) -> None:
    name = f"t{next(_names)}"
    report = produce_clicks(broker, name, GenOptions(count=3000, bad_ratio=0.1, seed=1))
    target, dlq = _tables(spark, name)
    loop = FlowLoop(spark, _flow("clicks_flow", name, broker, target, dlq))

    results = loop.run_until_caught_up()
    assert len(results) >= 4  # capped at 700 records per batch
    valid = _offsets(spark, target)
    bad = _offsets(spark, dlq, "topic", "partition", "offset")
    assert len(valid) == report.valid and len(bad) == report.malformed
    assert len(set(valid)) == len(valid) and not set(valid) & set(bad)
    assert len(valid) + len(bad) == 3000
    errors = {r[0] for r in spark.sql(f"SELECT error FROM {dlq}").collect()}
    assert any("malformed JSON" in e for e in errors)

    marker = commit.last_marker(spark, target, "clicks_flow")
    assert marker is not None
    offsets = marker.end[f"kafka:{name}"]
    assert sum(v for k, v in offsets.items() if k.isdigit()) == 3000
    cluster = AdminClient({"bootstrap.servers": broker}).list_topics(timeout=5).cluster_id
    assert offsets["cluster"] == cluster  # the offsets name the cluster they belong to
    assert loop.run_batch() is None  # caught up: a replay plans nothing


class _FailingSink:
    """Dies after the side tables committed and before the target commit, once."""

    reads_first = False

    def __init__(self) -> None:
        self.failed = False

    def side_tables(self) -> tuple[str, ...]:
        return ()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        if not self.failed:
            self.failed = True
            raise RuntimeError("simulated crash between the dead-letter and target commits")
        return AppendSink().write(spark, df, target, props, sides_done)


@BOTH
def test_half_committed_batch_is_finished_without_duplicates(
        spark: SparkSession, broker: str) -> None:
    name = f"t{next(_names)}"
    report = produce_clicks(broker, name, GenOptions(count=1000, bad_ratio=0.2, seed=2))
    target, dlq = _tables(spark, name)
    sink = _FailingSink()
    with pytest.raises(RuntimeError, match="simulated crash"):
        FlowLoop(spark, _flow("f", name, broker, target, dlq, sink)).run_batch()
    first_dlq = spark.table(dlq).count()
    assert first_dlq > 0 and spark.table(target).count() == 0

    # More data arrives before the restart: the pending batch must still end where it did.
    produce_clicks(broker, name, GenOptions(count=500, bad_ratio=0.2, seed=3))
    loop = FlowLoop(spark, _flow("f", name, broker, target, dlq, sink))
    loop.run_until_caught_up(max_batches=50)
    while loop.run_batch() is not None:
        pass
    valid = _offsets(spark, target)
    bad = _offsets(spark, dlq, "topic", "partition", "offset")
    assert len(valid) + len(bad) == 1500
    assert len(set(bad)) == len(bad) and len(set(valid)) == len(valid)
    assert report.malformed <= len(bad)


def test_once_after_a_half_committed_batch_reads_on_to_the_end(
        spark: SparkSession, loop_broker: str) -> None:
    """Finishing a half-committed batch re-plans a *past* end: it is not "caught up", so
    ``--once`` (``run_until_caught_up``, uncapped) goes on to what arrived after it."""
    name = f"t{next(_names)}"
    produce_clicks(loop_broker, name, GenOptions(count=400, bad_ratio=0.2, seed=7))
    target, dlq = _tables(spark, name)
    sink = _FailingSink()
    with pytest.raises(RuntimeError, match="simulated crash"):
        FlowLoop(spark, _flow("o", name, loop_broker, target, dlq, sink, None)).run_batch()
    produce_clicks(loop_broker, name, GenOptions(count=300, bad_ratio=0.2, seed=8))
    loop = FlowLoop(spark, _flow("o", name, loop_broker, target, dlq, sink, None))
    results = loop.run_until_caught_up()
    assert [r.rows_in for r in results] == [400, 300]
    assert [r.caught_up for r in results] == [False, True]
    assert spark.table(target).count() + spark.table(dlq).count() == 700


@BOTH
def test_a_second_writer_of_the_same_flow_never_commits_a_range_twice(
        spark: SparkSession, broker: str) -> None:
    """Writer A plans a batch; before it commits, writer B (same flow, same target) commits
    the same range. A's commit is rejected (nothing written, dead letters included) and A
    re-plans from B's marker: every offset lands exactly once."""
    name = f"t{next(_names)}"
    produce_clicks(broker, name, GenOptions(count=900, bad_ratio=0.1, seed=11))
    target, dlq = _tables(spark, name)
    other = FlowLoop(spark, _flow("race", name, broker, target, dlq, max_records=300))
    plain = _flow("race", name, broker, target, dlq, max_records=300)
    raced = []

    def transform(ctx: BatchContext) -> DataFrame:
        out = plain.transform(ctx)
        if not raced:  # the other writer commits while this batch is in flight
            raced.append(other.run_batch())
        return out

    loop = FlowLoop(spark, Flow(name="race", target=target, sources=plain.sources,
                                transform=transform, side_tables=(dlq,), max_records=300,
                                aliases=plain.aliases))
    results = loop.run_until_caught_up()
    assert raced[0] is not None and raced[0].end == results[0].start  # A went on after B
    valid = _offsets(spark, target)
    bad = _offsets(spark, dlq, "topic", "partition", "offset")
    assert len(valid) == len(set(valid)) and len(bad) == len(set(bad))
    assert len(valid) + len(bad) == 900


def test_empty_append_advances_position(spark: SparkSession, loop_broker: str) -> None:
    name = f"t{next(_names)}"
    produce_clicks(loop_broker, name, GenOptions(count=50, bad_ratio=1.0, seed=4))
    target, dlq = _tables(spark, name)
    loop = FlowLoop(spark, _flow("g", name, loop_broker, target, dlq))
    assert loop.run_until_caught_up()
    assert spark.table(target).count() == 0 and spark.table(dlq).count() == 50
    marker = commit.last_marker(spark, target, "g")
    assert marker is not None and marker.dlq_rows == 50
    assert loop.run_batch() is None


class _CountsSidesApart(FlowLoop):
    """The same loop, counting the dead letters by a job of their own."""

    def _check(self, ctx: BatchContext, out: DataFrame
               ) -> tuple[Stats | None, DataFrame, Mapping[str, str]]:
        counted, kept, extra = super()._check(ctx, out)
        return (replace(counted, observed={}) if counted else None), kept, extra


def _appended(spark: SparkSession, bootstrap: str, loop_class: type[FlowLoop],
              bad_ratio: float) -> tuple[list[BatchResult], str, str]:
    name = f"t{next(_names)}"
    produce_clicks(bootstrap, name, GenOptions(count=1400, bad_ratio=bad_ratio, seed=6))
    target, dlq = _tables(spark, name)
    loop = loop_class(spark, _flow("appended", name, bootstrap, target, dlq))
    return loop.run_until_caught_up(), target, dlq


@BOTH
@pytest.mark.parametrize("bad_ratio", [0.0, 0.1])
def test_dead_letters_are_counted_by_the_job_that_counts_the_batch(
        spark: SparkSession, broker: str, bad_ratio: float) -> None:
    """The job counting the output also counts the rejected rows (an observed metric): a
    batch's dead letters need no job of their own to be counted, none when there are none."""
    observed, target, dlq = _appended(spark, broker, FlowLoop, bad_ratio)
    apart, target_apart, dlq_apart = _appended(spark, broker, _CountsSidesApart, bad_ratio)

    assert spark.table(dlq).count() == sum(r.dlq_rows for r in observed) == (
        spark.table(dlq_apart).count()) == sum(r.dlq_rows for r in apart)
    assert (sum(r.dlq_rows for r in observed) > 0) == (bad_ratio > 0)
    assert spark.table(target).count() == spark.table(target_apart).count() == (
        1400 - sum(r.dlq_rows for r in observed))
    assert [r.jobs + 1 for r in observed] == [r.jobs for r in apart]
    for r in observed:
        marker_rows = [m.rows for m in _dlq_markers(spark, dlq) if m.end == r.end]
        assert marker_rows == ([r.dlq_rows] if r.dlq_rows else [])


def _dlq_markers(spark: SparkSession, dlq: str) -> list[Marker]:
    return [m for _, summary in commit.iter_ancestor_summaries(spark, dlq)
            if (m := Marker.from_summary(summary)) is not None]


class _CountedFirst(MergeSink):
    """The same MERGE, with the loop counting the batch by a job of its own first."""

    reads_first = False


def _merged_batches(spark: SparkSession, bootstrap: str,
                    sink_class: type[MergeSink]) -> tuple[list[BatchResult], str, int]:
    """Run a first-row MERGE flow over 1,500 clicks: its batches, its target, valid rows."""
    name = f"t{next(_names)}"
    report = produce_clicks(bootstrap, name, GenOptions(count=1500, bad_ratio=0.1, seed=5))
    target, dlq = _tables(spark, name)
    spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ('write.merge.mode'='merge-on-read')")
    sink = sink_class(first_row("updateTime"), ("_kafka_partition", "_kafka_offset"))
    flow = replace(_flow("merged", name, bootstrap, target, dlq, sink=sink),
                   event_time_column="_kafka_ts")
    return FlowLoop(spark, flow).run_until_caught_up(), target, report.valid


def test_a_merge_batch_is_counted_on_the_sinks_own_read(
        spark: SparkSession, loop_broker: str) -> None:
    """A MERGE sink reads every row before it commits: the marker's row count and newest
    event time are observed on that read, one Spark job fewer per batch, same figures."""
    observed, target, valid = _merged_batches(spark, loop_broker, MergeSink)
    counted, _, _ = _merged_batches(spark, loop_broker, _CountedFirst)

    assert sum(r.rows for r in observed) == sum(r.rows for r in counted) == valid
    assert spark.table(target).count() == valid
    assert [r.changes[target].inserted for r in observed] == [r.rows for r in observed]
    newest = spark.sql(f"SELECT max(unix_millis(_kafka_ts)) FROM {target}").collect()[0][0]
    assert max(r.max_event_time_ms or 0 for r in observed) == newest
    marker = commit.last_marker(spark, target, "merged")
    assert marker is not None and marker.max_event_time_ms == observed[-1].max_event_time_ms
    # the MERGE's read spares the count's job; a count spares the dead letters' count
    assert [r.jobs for r in observed] == [r.jobs for r in counted]


def test_restarted_in_memory_broker_is_read_from_its_beginning(
        spark: SparkSession, tmp_path: Path) -> None:
    """Offsets committed on one (in-memory) broker are never applied to its empty successor."""
    name = f"t{next(_names)}"
    target, dlq = _tables(spark, name)
    port = free_port()
    with EmbeddedBroker(port, tmp_path / "first") as first:
        produce_clicks(first.bootstrap, name, GenOptions(count=600, seed=5))
        FlowLoop(spark, _flow("h", name, first.bootstrap, target, dlq)).run_until_caught_up()
    with EmbeddedBroker(port, tmp_path / "second") as second:
        # Fewer events than were committed: old offsets would be "in range" and skip them.
        produce_clicks(second.bootstrap, name, GenOptions(count=300, seed=6))
        loop = FlowLoop(spark, _flow("h", name, second.bootstrap, target, dlq))
        loop.run_until_caught_up()
    assert spark.table(target).count() == 900
    marker = commit.last_marker(spark, target, "h")
    assert marker is not None
    assert marker.end[f"kafka:{name}"]["cluster"] != marker.start[f"kafka:{name}"]["cluster"]


def test_a_backlog_is_taken_in_time_sized_batches_and_a_restart_sizes_from_its_marker(
        spark: SparkSession, loop_broker: str) -> None:
    name = f"t{next(_names)}"
    produce_clicks(loop_broker, name, GenOptions(count=5000, bad_ratio=0.0, seed=3))
    target, dlq = _tables(spark, name)
    loop = FlowLoop(spark, _flow("sized", name, loop_broker, target, dlq, max_records=None))
    loop.batch_seconds = 0.05  # far below any batch's duration: every cap is the floor

    results = loop.run_until_caught_up()
    assert [r.rows_in for r in results] == [FLOOR] * 5  # each one full: more may wait
    assert not any(r.caught_up for r in results) and loop.run_batch() is None
    assert len(set(_offsets(spark, target))) == 5000  # each event once

    produce_clicks(loop_broker, name, GenOptions(count=3000, bad_ratio=0.0, seed=4))
    restarted = FlowLoop(spark, _flow("sized", name, loop_broker, target, dlq,
                                      max_records=None))
    assert restarted.run_batch() is not None  # no time bound: the whole backlog at once
    assert len(set(_offsets(spark, target))) == 8000
    marker = commit.last_marker(spark, target, "sized")
    assert marker is not None and marker.rows_in == 3000
    produce_clicks(loop_broker, name, GenOptions(count=3000, bad_ratio=0.0, seed=5))
    again = FlowLoop(spark, _flow("sized", name, loop_broker, target, dlq, max_records=None))
    again.batch_seconds = 0.5 * (marker.batch_ms or 1) / 1000  # half the last batch's time
    first = again.run_batch()
    assert first is not None and FLOOR <= first.rows_in < 3000 and not first.caught_up
    again.run_until_caught_up()
    assert again.run_batch() is None  # all taken, in batches of whatever size
    assert len(set(_offsets(spark, target))) == 11_000


class _RecomputesLookups(FlowLoop):
    """The same loop, recomputing the output for the write whatever it looked up."""

    def _reuse_inputs(self, ctx: BatchContext) -> bool:
        return (self.flow.checker is None and bool(ctx.accessed)
                and all(ctx.is_cached(key) for key in ctx.accessed))


def _enriched(spark: SparkSession, bootstrap: str, loop_class: type[FlowLoop]
              ) -> tuple[list[BatchResult], str]:
    """Clicks joined with a looked-up lake table of products (broadcast)."""
    name = f"t{next(_names)}"
    produce_clicks(bootstrap, name, GenOptions(count=1400, seed=7))
    target, dlq = _tables(spark, name)
    spark.sql(f"ALTER TABLE {target} ADD COLUMN label string")
    dim = f"lake.flowtest.{name}_products"
    spark.sql(f"CREATE TABLE {dim} (productId string, label string) USING iceberg")
    spark.sql(f"INSERT INTO {dim} SELECT CAST(id AS string), concat('p', id) "
              "FROM range(0, 10)")
    flow = _flow("enriched", name, bootstrap, target, dlq)
    read = flow.transform

    def transform(ctx: BatchContext) -> DataFrame:
        from pyspark.sql import functions as F
        return read(ctx).join(F.broadcast(ctx.table(dim)), "productId", "left")

    loop = loop_class(spark, replace(flow, transform=transform))
    return loop.run_until_caught_up(), target


def test_a_flow_that_looks_up_a_dimension_broadcasts_it_once_a_batch(
        spark: SparkSession, loop_broker: str) -> None:
    """The output of a flow with look-ups is kept for the write: the dimension is collected
    and broadcast for the counting pass only, one Spark job fewer per batch, same rows."""
    kept, target = _enriched(spark, loop_broker, FlowLoop)
    recomputed, target_again = _enriched(spark, loop_broker, _RecomputesLookups)

    def rows(table: str) -> list[tuple[str, str | None]]:
        return sorted((r[0], r[1]) for r in spark.sql(
            f"SELECT productId, label FROM {table}").collect())

    assert rows(target) == rows(target_again) and len(rows(target)) == sum(
        r.rows for r in kept) > 0
    assert any(label is not None for _, label in rows(target))
    assert [r.jobs + 1 for r in kept] == [r.jobs for r in recomputed]
