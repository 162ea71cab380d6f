"""The CDC hop: MariaDB ``user_db.user_member`` into an Iceberg primary-key table, both
engines, the same binlog, the same commit interval (the seed's 10 s).

icetide: the example's CDC flow ``dim_db.user_member`` (:mod:`.ours`); Flink: ``mysql-cdc``
into the peer's ``dim_db.user_member`` (:mod:`.sql_hops`). Measured:

1. **snapshot**: ``--members`` rows copied, icetide alone, then Flink started alone and
   timed from its first commit, as on the ODS hop;
2. **binlog backlog**: ``--changes`` member updates made while Flink is stopped
   (SIGSTOP) and icetide idle; icetide catches up alone, then Flink, continued, from its
   first commit after that to the one holding the last change;
3. **freshness** at each ``--cdc-rates`` (changes/s) with a probe change a second, each
   engine alone: probe written → the first commit whose added rows hold its value or a
   later one (:func:`.snapshots.state_latencies`);
4. **row check**: both drained, MariaDB's rows, icetide's and Flink's, every column.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmarks.cpu import CpuMeter, descendants
from benchmarks.freshness.trace import Probe
from benchmarks.peers.flink.cdc_load import (
    PROBE,
    TABLE,
    change_members,
    probe_value,
    produce_changes,
    set_probe,
)
from benchmarks.peers.flink.engine import FlinkJob
from benchmarks.peers.flink.measure import DRAIN_S, Freshness, Throughput, spark_roles, stopped
from benchmarks.peers.flink.ours import MEMBERS
from benchmarks.peers.flink.rows import Compared, Row, compare, flink_rows, lake_rows
from benchmarks.peers.flink.snapshots import (
    Commit,
    added_images,
    commits_since,
    first_commits,
    state_latencies,
)
from benchmarks.peers.flink.sql_hops import MEMBER_COLUMNS
from icetide.devkit.demo.shop import Shop
from icetide.flows.loop import Flow, FlowLoop

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import SparkSession

    from icetide.engine.run import PipelineRun

TableOf = Callable[[], "Table | None"]


@dataclass(frozen=True)
class CdcEngines:
    """Both sides of the CDC hop, running, and the database they follow."""

    spark: SparkSession
    run: PipelineRun  # icetide: the CDC flow of dim_db.user_member
    flow: Flow
    flink: FlinkJob
    catalog: Any
    shop: Shop
    db_pid: int | None
    members: int  # generated members (the changes pick among them)

    def ours(self) -> Table | None:
        try:
            table: Table = self.catalog.load_table(tuple(MEMBERS.split(".")))
        except Exception:  # not created yet
            return None
        return table


def probe_commits(table: Table | None, since_ms: int) -> dict[str, int]:
    """Per value the probe row had, the commit time of the first image holding it."""
    if table is None:
        return {}
    images = added_images(table, ["show_params"], since_ms, where=[("userid", "=", PROBE)])
    return first_commits((ms, rows.column("show_params").to_pylist()) for ms, rows in images)


def wait_value(table_of: TableOf, value: str, since_ms: int, timeout_s: float,
               check: Callable[[], None] = lambda: None) -> float:
    """Block until the probe row's ``value`` is committed; the monotonic time seen."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        check()
        if value in probe_commits(table_of(), since_ms):
            return time.monotonic()
        time.sleep(0.2)
    raise SystemExit(f"the probe row's {value!r} was not committed in {timeout_s:.0f}s")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _sync(e: CdcEngines, name: str) -> tuple[str, int]:
    """A marker change: every change before it is in a table once it is."""
    since = _now_ms()
    with e.shop.connect() as conn:
        set_probe(conn, name)
    return name, since


def icetide_catch_up(spark: SparkSession, flow: Flow, rows: int) -> Throughput:
    """icetide's flow until it has everything in the binlog: ``rows`` (snapshot rows or
    binlog changes: a batch writes a key's changes folded into one row), time, CPU."""
    meter = CpuMeter(spark_roles(spark))
    meter.start()
    began = time.perf_counter()
    FlowLoop(spark, flow).run_until_caught_up()
    return Throughput(rows, time.perf_counter() - began, meter.stop())


def binlog_backlog(e: CdcEngines, changes: int, timeout_s: float
                   ) -> tuple[Throughput, Throughput | None]:
    """``changes`` updates made with Flink stopped; icetide catches up alone, then Flink."""
    with stopped(e.flink.pid):
        with e.shop.connect() as conn:
            changed = change_members(conn, changes, e.members)
        marker, since = _sync(e, "backlog-end")
        ours = icetide_catch_up(e.spark, e.flow, changed + 1)
    return ours, flink_binlog(e, marker, since, changed + 1, timeout_s)


def flink_binlog(e: CdcEngines, marker: str, since_ms: int, rows: int, timeout_s: float
                 ) -> Throughput | None:
    """Flink, continued, from its first commit with rows to the one holding ``marker``
    (None when that first commit holds it)."""
    deadline = time.monotonic() + timeout_s
    while not (done := _commits_with_rows(e.flink.table(), since_ms)):
        e.flink.check()
        if time.monotonic() > deadline:
            raise SystemExit(f"no CDC commit in {timeout_s:.0f}s; the end of its log:\n"
                             f"{e.flink.log_tail()}")
        time.sleep(0.1)
    first = done[0]
    meter = CpuMeter({"flink": lambda: descendants(e.flink.pid)})
    meter.start()
    began = time.monotonic()
    if probe_commits(e.flink.table(), since_ms).get(marker) == first.committed_ms:
        return None
    ended = wait_value(e.flink.table, marker, since_ms, timeout_s, e.flink.check)
    return Throughput(rows - first.added_records, ended - began, meter.stop())


def _commits_with_rows(table: Table | None, since_ms: int) -> list[Commit]:
    """The commits from ``since_ms`` on that added rows (Flink's sink also commits an
    empty snapshot after a run of empty checkpoints)."""
    if table is None:
        return []
    return [c for c in commits_since(table, since_ms) if c.added_records > 0]


def _icetide_window(e: CdcEngines, w: Freshness, seed: int) -> None:
    """icetide alone (Flink stopped): caught up, then its pipeline while changes come."""
    FlowLoop(e.spark, e.flow).run_until_caught_up()
    stop = threading.Event()
    loop = threading.Thread(target=e.run.run_forever, args=(stop,), daemon=True)
    loop.start()
    meter = CpuMeter({**spark_roles(e.spark), "broker": lambda: [e.db_pid] if e.db_pid else []})
    produced: list[int] = []
    valid, cores = produce_changes(e.shop.connect, w.rate, w.seconds, e.members, seed,
                                   produced, meter)
    if produced:  # one not visible by then is reported as missing
        with contextlib.suppress(SystemExit):
            wait_value(e.ours, probe_value(produced[-1]), produced[0], DRAIN_S)
    stop.set()
    loop.join()
    w.valid += valid
    w.probes = [Probe(0, i, ms) for i, ms in enumerate(produced)]
    w.cores["icetide"] = cores["driver"] + cores["jvm"] + cores["workers"]
    w.cores["broker"] = cores["broker"]
    visible = probe_commits(e.ours(), min(produced, default=0))
    w.icetide = state_latencies(produced, [probe_value(p) for p in produced], visible)


def _flink_window(e: CdcEngines, w: Freshness, seed: int) -> None:
    """Flink alone (icetide idle): caught up on what it missed, then changes come."""
    marker, since = _sync(e, f"sync-{seed}")
    wait_value(e.flink.table, marker, since, DRAIN_S, e.flink.check)
    meter = CpuMeter({"flink": lambda: descendants(e.flink.pid)})
    produced: list[int] = []
    valid, cores = produce_changes(e.shop.connect, w.rate, w.seconds, e.members, seed,
                                   produced, meter)
    if produced:
        wait_value(e.flink.table, probe_value(produced[-1]), produced[0], DRAIN_S,
                   e.flink.check)
    w.valid += valid
    w.flink_probes = [Probe(0, i, ms) for i, ms in enumerate(produced)]
    w.cores["flink"] = cores["flink"]
    visible = probe_commits(e.flink.table(), min(produced, default=0))
    w.flink = state_latencies(produced, [probe_value(p) for p in produced], visible)


def freshness(e: CdcEngines, rate: float, seconds: float, seed: int) -> Freshness:
    """Each engine alone in turn while members change at ``rate`` with a probe a second."""
    window = Freshness(rate, seconds)
    with stopped(e.flink.pid):
        _icetide_window(e, window, seed)
    _flink_window(e, window, seed + 1000)
    return window


@dataclass(frozen=True)
class CdcCheck:
    """MariaDB's table, icetide's and Flink's, both drained."""

    source: int  # rows in MariaDB
    icetide: Compared  # icetide against MariaDB
    flink: Compared  # Flink against MariaDB


def source_rows(shop: Shop) -> list[Row]:
    """Every row of MariaDB's table (times as the server's UTC wall clock)."""
    with shop.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(MEMBER_COLUMNS)} FROM {TABLE}")
        return [tuple(r) for r in cur.fetchall()]


def row_check(e: CdcEngines, timeout_s: float) -> CdcCheck:
    """Drain both, then compare each with MariaDB row for row."""
    marker, since = _sync(e, "check")
    FlowLoop(e.spark, e.flow).run_until_caught_up()
    wait_value(e.flink.table, marker, since, timeout_s, e.flink.check)
    source = source_rows(e.shop)
    return CdcCheck(len(source),
                    compare(lake_rows(e.spark, f"lake.{MEMBERS}", MEMBER_COLUMNS), source),
                    compare(flink_rows(e.spark, e.flink, MEMBER_COLUMNS), source))
