"""The measured phases: backlog throughput and CPU, freshness at a rate, the row check.

icetide runs in this process as ``benchmarks.ingest`` runs it (the clickstream ODS flow
on a SparkSession, products from the seed rows); the peer is the Flink job
(:mod:`.engine`) reading the same topic, products from the same seed rows in MariaDB.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.cpu import CpuMeter, descendants
from benchmarks.freshness.run import _probe_loop
from benchmarks.freshness.trace import ODS, Probe, commits, ods_hits
from benchmarks.peers.flink.engine import FlinkJob
from benchmarks.peers.flink.sql import COLUMNS
from icetide.config import Settings
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.flows.loop import Flow, FlowLoop

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[3]
TOPIC = "clicktopic"
DRAIN_S = 180.0


@dataclass(frozen=True)
class Engines:
    """Both sides of the comparison, running."""

    spark: SparkSession
    flow: Flow
    flink: FlinkJob
    catalog: Any  # pyiceberg reader of icetide's catalog
    bootstrap: str
    broker_pid: int | None


@dataclass(frozen=True)
class Throughput:
    """One engine over the backlog: valid events committed per second and CPU seconds."""

    rows: int
    seconds: float
    cpu: Mapping[str, float]

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def cpu_per_million(self) -> float:
        return sum(self.cpu.values()) * 1_000_000 / self.rows if self.rows else 0.0


@dataclass
class Freshness:
    """Probe produced → commit that made it visible, per engine, at one rate: each engine
    in a window of its own (the other one stopped), on the same kind of clicks."""

    rate: float
    seconds: float
    probes: list[Probe] = field(default_factory=list)  # icetide's window
    flink_probes: list[Probe] = field(default_factory=list)  # Flink's window
    icetide: list[float | None] = field(default_factory=list)
    flink: list[float | None] = field(default_factory=list)
    cores: dict[str, float] = field(default_factory=dict)
    valid: int = 0  # valid clicks produced in both windows (probes not counted)

    @property
    def produced(self) -> int:
        """Valid clicks and probes of both windows: rows each engine adds."""
        return self.valid + len(self.probes) + len(self.flink_probes)


def icetide_flow(settings: Settings) -> tuple[SparkSession, Flow]:
    """The clickstream ODS flow on a SparkSession, dimensions from the seed rows."""
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline
    from icetide.runtime.session import get_spark

    spark = get_spark(settings)
    load_seed_dimensions(spark, settings.catalog.name)
    with PipelineRun(spark, settings, load_pipeline(ROOT / "examples" / "clickstream"),
                     only=["clickevent"]) as run:
        return spark, run.compile(run.flows[0])


def spark_roles(spark: SparkSession) -> dict[str, Any]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    return {"driver": lambda: [os.getpid()], "jvm": lambda: [jvm_pid],
            "workers": lambda: descendants(jvm_pid)[1:]}


def icetide_backlog(spark: SparkSession, flow: Flow) -> Throughput:
    """icetide catches up on the topic (its warm-up done): rows, seconds, CPU."""
    meter = CpuMeter(spark_roles(spark))
    meter.start()
    began = time.perf_counter()
    results = FlowLoop(spark, flow).run_until_caught_up()
    seconds = time.perf_counter() - began
    return Throughput(sum(r.rows for r in results), seconds, meter.stop())


def flink_backlog(job: FlinkJob, total: int, timeout_s: float) -> Throughput | None:
    """The peer, started on the whole topic, from its first commit to the one holding
    ``total`` rows (its start-up and first checkpoint left out); None when the first
    commit already held everything (too small a backlog to time)."""
    return timed_from_first_commit(job, job.committed_rows, job.wait_rows, total, timeout_s)


def timed_from_first_commit(job: FlinkJob, count: Callable[[], int],
                            wait: Callable[[int, float], float], total: int,
                            timeout_s: float) -> Throughput | None:
    """A Flink job's backlog timed from its first commit (``count`` > 0) until ``wait``
    returns the moment ``count`` reached ``total``: rows, seconds and the job's CPU;
    None when the first commit already held everything."""
    deadline = time.monotonic() + timeout_s
    while (first := count()) == 0:
        job.check()
        if time.monotonic() > deadline:
            raise SystemExit(f"no Flink commit in {timeout_s:.0f}s; the end of its log:\n"
                             f"{job.log_tail()}")
        time.sleep(0.1)
    meter = CpuMeter({"flink": lambda: descendants(job.pid)})
    meter.start()
    began = time.monotonic()
    if first >= total:
        return None
    ended = wait(total, timeout_s)
    return Throughput(total - first, ended - began, meter.stop())


def flink_probe_commits(table: Table, since_ms: int = 0) -> dict[int, int]:
    """Per probe (by its produce time, ``updateTime``), the commit time of the snapshot
    that added it: the added data files of each snapshot committed from ``since_ms`` on,
    read for ``uid = 'probe'``."""
    import pyarrow.parquet as pq
    from pyiceberg.manifest import ManifestEntryStatus

    seen: dict[int, int] = {}
    for snap in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0):
        if snap.timestamp_ms < since_ms:
            continue
        for manifest in snap.manifests(table.io):
            if manifest.added_snapshot_id != snap.snapshot_id:
                continue
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                if entry.status != ManifestEntryStatus.ADDED:
                    continue
                path = entry.data_file.file_path.removeprefix("file:")
                rows = pq.read_table("/" + path.lstrip("/"), columns=["updateTime"],
                                     filters=[("uid", "=", "probe")])
                for produced in rows.column("updateTime").to_pylist():
                    seen.setdefault(produced, snap.timestamp_ms)
    return seen


@contextmanager
def stopped(*pids: int) -> Iterator[None]:
    """The process trees of ``pids`` stopped (SIGSTOP) inside the block, continued after."""
    tree = [p for pid in pids for p in descendants(pid)]
    for p in tree:
        os.kill(p, signal.SIGSTOP)
    try:
        yield
    finally:
        for p in tree:
            os.kill(p, signal.SIGCONT)


def produce_at_rate(bootstrap: str, rate: float, seconds: float, seed: int,
                    probes: list[Probe], meter: CpuMeter) -> tuple[int, dict[str, float]]:
    """Clicks at ``rate`` for ``seconds`` with a probe a second (productId ``probe-<i>``
    for the i-th): valid clicks, and the cores ``meter`` saw."""
    probes_stop = threading.Event()
    prober = threading.Thread(target=_probe_loop, args=(bootstrap, probes_stop, probes),
                              daemon=True)
    meter.start()
    began = time.monotonic()
    prober.start()
    report = produce_clicks(bootstrap, TOPIC, GenOptions(count=0, rate=rate,
                                                           duration=seconds, seed=seed))
    probes_stop.set()
    prober.join()
    cpu, elapsed = meter.stop(), time.monotonic() - began
    return report.valid, {k: v / elapsed for k, v in cpu.items()}


def _icetide_window(e: Engines, w: Freshness, trigger: float, seed: int) -> None:
    """icetide alone (Flink stopped): caught up first, then its loop while clicks come."""
    FlowLoop(e.spark, e.flow).run_until_caught_up()
    stop = threading.Event()
    loop = threading.Thread(target=FlowLoop(e.spark, e.flow).run_forever,
                            args=(trigger, stop), daemon=True)
    loop.start()
    meter = CpuMeter({**spark_roles(e.spark),
                      "broker": lambda: [e.broker_pid] if e.broker_pid else []})
    valid, cores = produce_at_rate(e.bootstrap, w.rate, w.seconds, seed, w.probes, meter)
    deadline = time.monotonic() + DRAIN_S
    while w.probes and time.monotonic() < deadline and not all(
            h is not None for h in ods_hits(commits(e.catalog, *ODS), w.probes[-3:])):
        time.sleep(1)
    stop.set()
    loop.join()
    w.valid += valid
    w.cores["icetide"] = cores["driver"] + cores["jvm"] + cores["workers"]
    w.cores["broker"] = cores["broker"]
    hits = ods_hits(commits(e.catalog, *ODS), w.probes)
    w.icetide = [None if h is None else (h.committed_ms - p.produced_ms) / 1000
                 for h, p in zip(hits, w.probes, strict=True)]


def _flink_window(e: Engines, w: Freshness, rows_before: int, seed: int) -> None:
    """Flink alone (icetide's loop not running): caught up first, then clicks come."""
    e.flink.wait_rows(rows_before, DRAIN_S)
    meter = CpuMeter({"flink": lambda: descendants(e.flink.pid)})
    valid, cores = produce_at_rate(e.bootstrap, w.rate, w.seconds, seed, w.flink_probes,
                                   meter)
    w.valid += valid
    w.cores["flink"] = cores["flink"]
    e.flink.wait_rows(rows_before + valid + len(w.flink_probes), DRAIN_S)
    table = e.flink.table()
    since = min((p.produced_ms for p in w.flink_probes), default=0)
    visible = flink_probe_commits(table, since) if table is not None else {}
    w.flink = [(visible[p.produced_ms] - p.produced_ms) / 1000
               if p.produced_ms in visible else None for p in w.flink_probes]


def freshness(e: Engines, rate: float, seconds: float, trigger: float, seed: int,
              rows_before: int) -> Freshness:
    """Each engine alone in turn while clicks come at ``rate`` with a probe a second:
    icetide with Flink's processes stopped, then Flink with icetide idle (``rows_before``:
    valid clicks and probes in the topic before the window)."""
    window = Freshness(rate, seconds)
    with stopped(e.flink.pid):
        _icetide_window(e, window, trigger, seed)
    before_flink = rows_before + window.valid + len(window.probes)
    _flink_window(e, window, before_flink, seed + 1000)
    return window


@dataclass(frozen=True)
class RowCheck:
    """icetide's ODS ``clickevent`` against the peer's ``clickevent``."""

    expected: int  # valid clicks produced, probes included
    icetide: int
    flink: int
    same: bool  # the same rows: every column of every row, as sorted tables
    only_icetide: int  # (cookieId, updateTime) keys in one table and not the other
    only_flink: int


def _sorted(table: pa.Table) -> pa.Table:
    return table.select(list(COLUMNS)).sort_by([(c, "ascending") for c in COLUMNS])


def row_check(e: Engines, expected: int, timeout_s: float) -> RowCheck:
    """Drain both, then compare the tables row for row."""
    FlowLoop(e.spark, e.flow).run_until_caught_up()
    e.flink.wait_rows(expected, timeout_s)
    ours = _sorted(e.catalog.load_table(ODS[0]).scan(selected_fields=COLUMNS).to_arrow())
    table = e.flink.table()
    assert table is not None
    theirs = _sorted(table.scan(selected_fields=COLUMNS).to_arrow())
    try:
        same = ours.equals(theirs.cast(ours.schema))
    except Exception:  # types that do not cast: not the same rows
        same = False
    keys = [set(zip(t.column("cookieId").to_pylist(), t.column("updateTime").to_pylist(),
                    strict=True)) for t in (ours, theirs)]
    return RowCheck(expected, ours.num_rows, theirs.num_rows, same,
                    len(keys[0] - keys[1]), len(keys[1] - keys[0]))
