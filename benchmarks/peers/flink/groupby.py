"""The GROUP BY hop: the seed's streaming statistic over the ODS table, both engines.

icetide: flow ``dws.count_clicks`` into ``dws.product_clicks`` (:mod:`.ours`), with the ODS
flow, under the pipeline's scheduler. Flink: the seed's query over the peer's own
``clickevent`` read as a stream (:mod:`.sql_hops`), beside the peer's ODS job. Each reads
its own engine's ODS table; the ODS row check shows the two hold the same rows.

Measured as the ODS hop is: the backlog (the whole ODS table; icetide's flow alone, then
Flink's job alone from its first commit), freshness at each rate with each engine alone
(probe click produced → the statistic's commit that counts it: icetide by its markers,
Flink by the first commit whose added rows hold the probe's group ``probe-<i>``), and the
row check (both drained, the same rows, and the counts adding up to the ODS rows).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.cpu import CpuMeter, descendants
from benchmarks.freshness.trace import ODS, Probe, commits, next_hits, ods_hits, sequences
from benchmarks.peers.flink.engine import FlinkJob
from benchmarks.peers.flink.measure import (
    DRAIN_S,
    Freshness,
    Throughput,
    produce_at_rate,
    spark_roles,
    stopped,
    timed_from_first_commit,
)
from benchmarks.peers.flink.ours import STATS, STATS_FLOW
from benchmarks.peers.flink.rows import Compared, compare, flink_rows, lake_rows
from benchmarks.peers.flink.snapshots import (
    added_images,
    commits_since,
    first_commits,
    fold_max,
    latencies,
)
from benchmarks.peers.flink.sql_hops import STATS_COLUMNS
from icetide.flows.loop import Flow, FlowLoop

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icetide.engine.run import PipelineRun


@dataclass
class ViewsProgress:
    """Flink's statistic as its commits show it: the highest count per product seen in
    the data files each commit added (counts only grow), summed."""

    job: FlinkJob
    best: dict[str, int] = field(default_factory=dict)
    read: set[int] = field(default_factory=set)

    def total(self) -> int:
        table = self.job.table()
        if table is None:
            return 0
        for _, rows in added_images(table, ["productId", "views"], skip=self.read):
            fold_max(self.best, rows.column("productId").to_pylist(),
                     rows.column("views").to_pylist())
        self.read |= {c.snapshot_id for c in commits_since(table)}
        return sum(self.best.values())

    def wait(self, total: int, timeout_s: float) -> float:
        """Block until the counts add up to ``total``; the monotonic time it was seen."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.job.check()
            if self.total() >= total:
                return time.monotonic()
            time.sleep(0.2)
        raise SystemExit(f"the Flink GROUP BY job counted {self.total():,} of {total:,} clicks "
                         f"in {timeout_s:.0f}s; the end of its log:\n{self.job.log_tail()}")


@dataclass(frozen=True)
class StatsEngines:
    """Both sides of the GROUP BY hop, running."""

    spark: SparkSession
    run: PipelineRun  # icetide: the ODS flow and the statistic's flow
    ods: FlinkJob
    stats: FlinkJob
    progress: ViewsProgress
    catalog: Any
    bootstrap: str
    broker_pid: int | None


def icetide_backlog(spark: SparkSession, flow: Flow, rows: int) -> Throughput:
    """icetide's statistic from nothing over the whole ODS table (``rows`` clicks)."""
    meter = CpuMeter(spark_roles(spark))
    meter.start()
    began = time.perf_counter()
    FlowLoop(spark, flow).run_until_caught_up()
    return Throughput(rows, time.perf_counter() - began, meter.stop())


def flink_backlog(progress: ViewsProgress, rows: int, timeout_s: float) -> Throughput | None:
    """The Flink job, started on the whole ODS table, from its first commit to the one
    counting every click (start-up and first checkpoint left out, as on the ODS hop);
    None when its first commit already counted them all."""
    return timed_from_first_commit(progress.job, progress.total, progress.wait, rows,
                                   timeout_s)


def probe_keys(probes: list[Probe]) -> list[str]:
    """The group of each probe click: the i-th probe of a window is ``probe-<i>``."""
    return [f"probe-{i}" for i in range(len(probes))]


def icetide_latencies(catalog: Any, probes: list[Probe]) -> list[float | None]:
    """Probe produced → the statistic's commit whose ODS position covers the probe."""
    ods = ods_hits(commits(catalog, *ODS), probes)
    hits = next_hits(ODS[0], sequences(catalog, ODS[0]), commits(catalog, STATS, (STATS_FLOW,)),
                     ods)
    return [None if h is None else (h.committed_ms - p.produced_ms) / 1000
            for h, p in zip(hits, probes, strict=True)]


def _icetide_window(e: StatsEngines, w: Freshness, seed: int) -> None:
    """icetide alone (Flink's jobs stopped): caught up, then its pipeline while clicks come."""
    e.run.run_once()
    stop = threading.Event()
    loop = threading.Thread(target=e.run.run_forever, args=(stop,), daemon=True)
    loop.start()
    meter = CpuMeter({**spark_roles(e.spark),
                      "broker": lambda: [e.broker_pid] if e.broker_pid else []})
    valid, cores = produce_at_rate(e.bootstrap, w.rate, w.seconds, seed, w.probes, meter)
    deadline = time.monotonic() + DRAIN_S
    while w.probes and time.monotonic() < deadline and None in icetide_latencies(
            e.catalog, w.probes[-3:]):
        time.sleep(1)
    stop.set()
    loop.join()
    w.valid += valid
    w.cores["icetide"] = cores["driver"] + cores["jvm"] + cores["workers"]
    w.cores["broker"] = cores["broker"]
    w.icetide = icetide_latencies(e.catalog, w.probes)


def _flink_window(e: StatsEngines, w: Freshness, rows_before: int, seed: int) -> None:
    """Flink alone (icetide idle): both jobs caught up first, then clicks come."""
    e.ods.wait_rows(rows_before, DRAIN_S)
    e.progress.wait(rows_before, DRAIN_S)
    meter = CpuMeter({"flink": lambda: descendants(e.ods.pid) + descendants(e.stats.pid)})
    valid, cores = produce_at_rate(e.bootstrap, w.rate, w.seconds, seed, w.flink_probes, meter)
    w.valid += valid
    w.cores["flink"] = cores["flink"]
    e.progress.wait(rows_before + valid + len(w.flink_probes), DRAIN_S)
    keys = probe_keys(w.flink_probes)
    table = e.stats.table()
    since = min((p.produced_ms for p in w.flink_probes), default=0)
    images = [] if table is None or not keys else added_images(
        table, ["productId"], since, where=[("productId", "in", keys)])
    visible = first_commits((ms, rows.column("productId").to_pylist()) for ms, rows in images)
    w.flink = latencies([p.produced_ms for p in w.flink_probes], keys, visible)


def freshness(e: StatsEngines, rate: float, seconds: float, seed: int,
              rows_before: int) -> Freshness:
    """Each engine alone in turn while clicks come at ``rate`` with a probe a second
    (``rows_before``: valid clicks and probes in the topic before the window)."""
    window = Freshness(rate, seconds)
    with stopped(e.ods.pid, e.stats.pid):
        _icetide_window(e, window, seed)
    _flink_window(e, window, rows_before + window.valid + len(window.probes), seed + 1000)
    return window


@dataclass(frozen=True)
class StatsCheck:
    """icetide's ``dws.product_clicks`` against the peer's, both drained."""

    expected: int  # clicks in ODS (valid clicks and probes produced)
    icetide_views: int  # the counts of each table, summed
    flink_views: int
    rows: Compared


def row_check(e: StatsEngines, expected: int, timeout_s: float) -> StatsCheck:
    """Drain both, then compare the two tables row for row."""
    e.run.run_once()
    e.ods.wait_rows(expected, timeout_s)
    e.progress.wait(expected, timeout_s)
    ours = lake_rows(e.spark, f"lake.{STATS}", STATS_COLUMNS)
    theirs = flink_rows(e.spark, e.stats, STATS_COLUMNS)
    return StatsCheck(expected, sum(r[-1] for r in ours), sum(r[-1] for r in theirs),
                      compare(ours, theirs))
