"""Compaction and expiry racing a MERGE flow: no commit lost, nothing duplicated, the
flow never spends its failure budget on a lost race, the table reconciles with a
recomputation from its source."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from pyspark.sql import DataFrame, SparkSession

from icetide.config import MaintenanceConfig, Settings
from icetide.flows.context import BatchContext
from icetide.flows.loop import Flow, FlowLoop
from icetide.lake import commit
from icetide.lake.sinks import MergeSink
from icetide.maintainer import Maintainer
from icetide.model.markers import Marker
from icetide.sources.iceberg import IcebergTableSource
from icetide.tables.ddl import PRIMARY_KEY_TABLE_PROPERTIES, create_table_sql
from icetide.tables.merge_engines import Deduplicate

pytestmark = pytest.mark.spark

UP, STATE = "lake.race.events", "lake.race.state"
COMMITS, ROWS, KEYS = 10, 40, 60


def _append(spark: SparkSession, c: int) -> None:
    """The upstream's ``c``-th commit: ``ROWS`` rows over the ``KEYS`` keys."""
    rows = spark.range(c * ROWS, (c + 1) * ROWS).selectExpr(
        f"id % {KEYS} AS id", "id * 7 AS v", "id AS seq")
    commit.append(rows.coalesce(1), UP, Marker("gen", {"c": c}, {"c": c + 1}).to_summary())


def _append_until_compacted(spark: SparkSession, compacted_at: list[float],
                            stop: threading.Event) -> None:
    """Upstream commits keep coming until three after the first compaction, so the flow
    is still committing when a compaction commits however fast either of them runs."""
    c, after = COMMITS, 0
    while not stop.is_set() and after < 3 and c < COMMITS + 200:
        _append(spark, c)
        c += 1
        after += bool(compacted_at)
        time.sleep(0.3)


def _upstream(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.race")
    spark.sql(f"CREATE TABLE {UP} (id bigint, v bigint, seq bigint) USING iceberg")
    for c in range(COMMITS):
        _append(spark, c)
    spark.sql(create_table_sql(STATE, [("id", "bigint NOT NULL"), ("v", "bigint"),
                                       ("seq", "bigint")],
                               partition_sql=["bucket(4, `id`)"],
                               properties=PRIMARY_KEY_TABLE_PROPERTIES))


def _flow(spark: SparkSession) -> Flow:
    src = IcebergTableSource(spark, UP)

    def transform(ctx: BatchContext) -> DataFrame:
        return ctx.read_source("events").select("id", "v", "seq")

    return Flow(name="merge_state", target=STATE, sources={src.key: src},
                transform=transform, sink=MergeSink(Deduplicate("seq"), ["id"]),
                max_records=2 * ROWS, aliases={"events": src.key})


def test_compaction_races_a_merge_flow(spark: SparkSession, icetide_settings: Settings,
                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _upstream(spark)
    loop = FlowLoop(spark, _flow(spark), max_failures=1)
    stop, errors = threading.Event(), []

    def drive() -> None:
        try:  # one real failure and the flow stops: lost races must not count
            loop.run_forever(0.05, stop)
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    policy = MaintenanceConfig(snapshot_retention=0, retain_last=1, min_input_files=2,
                               delete_ratio=0.01, orphan_interval=86400)
    maintainer = Maintainer(spark, icetide_settings.model_copy(update={"maintenance": policy}))
    writer = threading.Thread(target=drive, daemon=True)
    writer.start()
    passes, deadline = [], time.monotonic() + 240
    compacted_at: list[float] = []  # wall-clock ends of passes that compacted
    appender = threading.Thread(target=_append_until_compacted,
                                args=(spark, compacted_at, stop), daemon=True)
    appender.start()
    while ((appender.is_alive() or not _caught_up(spark)) and time.monotonic() < deadline
           and not errors):
        maintainer.marks(refresh=True)
        passes.append(maintainer.run(STATE))
        if passes[-1].actions.compaction is not None:
            compacted_at.append(time.time())
    stop.set()
    writer.join(60)
    appender.join(60)
    assert not errors, errors
    assert _caught_up(spark), "the flow did not reach the upstream's current snapshot"
    assert compacted_at, passes
    # they raced: a compaction committed while the flow was still committing batches
    commits = [r.created for r in caplog.records
               if r.getMessage().startswith("flow merge_state: committed")]
    assert any(commits[0] < at < commits[-1] for at in compacted_at), (commits, compacted_at)
    final = maintainer.run(STATE)
    _reconciles(spark)
    # every delete applied: the data files hold exactly the live rows (position deletes
    # left dangling by a group that lost its race are dropped as the passes go on)
    assert final.after is not None and final.after.records == KEYS, final
    assert final.after.delete_files <= final.before.delete_files, final
    conflicts = [r for r in caplog.records if "conflict" in r.getMessage()]
    logging.getLogger(__name__).info("passes %d, conflicts %d", len(passes), len(conflicts))


def _caught_up(spark: SparkSession) -> bool:
    marker = commit.last_marker(spark, STATE, "merge_state")
    current = int(commit.load_table(spark, UP).currentSnapshot().snapshotId())
    return marker is not None and marker.end == {f"iceberg:{UP}": {"snapshot": current}}


def _reconciles(spark: SparkSession) -> None:
    expected = spark.sql(
        f"SELECT id, max_by(v, seq) AS v, max(seq) AS seq FROM {UP} GROUP BY id").collect()
    actual = spark.table(STATE).collect()
    assert sorted(actual) == sorted(expected)
    assert len(actual) == KEYS
