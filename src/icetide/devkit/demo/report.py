"""What a demo run did: live progress, committed batches, the final report (JSON for CI)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from icetide.devkit.gen.business import BusinessReport
from icetide.devkit.gen.clicks import GenReport
from icetide.flows.loop import BatchResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icetide.app.status import TableStatus
    from icetide.config import Settings
    from icetide.devkit.demo.edits import Edit
    from icetide.devkit.demo.reconcile import Check
    from icetide.devkit.demo.shop import Shop
    from icetide.devkit.demo.warmup import WarmUpReport


@dataclass
class DemoProgress:
    """Counters the live view reads while the demo runs (written by the demo's threads)."""

    #: starting | warming up | editing | running | catching up | draining | reconciling | done
    phase: str = "starting"
    dims: str = "?"  # cdc | seed
    clicks: int = 0  # events handed to the producer so far
    started: float = field(default_factory=time.monotonic)
    #: (phase, monotonic time it began), in order
    history: list[tuple[str, float]] = field(default_factory=list)
    #: the edits' phase (epoch ms): from the end of the warm-up to the window's opening
    edits_start_ms: int | None = None
    #: how the layers got back within their targets after the edits (None: no edits)
    edits_settled: WarmUpReport | None = None
    #: the measured window (epoch ms): opened once the edits settled, closed after the drain
    window_start_ms: int | None = None
    window_end_ms: int | None = None

    def open_edits(self) -> None:
        """The warm-up is over: the edits are made, phase ``editing``."""
        self.edits_start_ms = int(time.time() * 1000)
        self.enter("editing")

    def edits_window(self) -> tuple[int, int] | None:
        """The edits' phase (epoch ms; up to the window's opening, or now)."""
        if self.edits_start_ms is None:
            return None
        end = self.window_start_ms or int(time.time() * 1000)
        return self.edits_start_ms, end

    def open_window(self) -> None:
        """The edits settled (or none were made): the measured window opens, phase
        ``running``."""
        self.window_start_ms = int(time.time() * 1000)
        self.enter("running")

    def close_window(self) -> None:
        """Everything produced in the window is committed: it closes."""
        if self.window_start_ms is not None:
            self.window_end_ms = int(time.time() * 1000)

    def window(self) -> tuple[int, int] | None:
        """The measured window (epoch ms; still open: up to now), None before it opened."""
        if self.window_start_ms is None:
            return None
        end = self.window_end_ms if self.window_end_ms is not None else int(time.time() * 1000)
        return self.window_start_ms, end

    def enter(self, phase: str) -> None:
        """Begin ``phase`` (the time spent per phase goes into the report)."""
        self.phase = phase
        self.history.append((phase, time.monotonic()))

    def seconds(self, until: float | None = None) -> dict[str, float]:
        """Seconds spent per phase so far (``starting`` = from start to the first phase)."""
        marks = [("starting", self.started), *self.history]
        end = time.monotonic() if until is None else until
        ends = [t for _, t in marks[1:]] + [end]
        return {name: round(stop - begin, 1)
                for (name, begin), stop in zip(marks, ends, strict=True)}

    def line(self) -> str:
        """One status line: phase, elapsed time, clicks produced, where the dimensions come from."""
        return (f"icetide demo: {self.phase}, {time.monotonic() - self.started:.0f}s, "
                f"{self.clicks:,} clicks produced, dimensions by {self.dims}")


class BatchCounter:
    """An ``on_batch`` callback that counts committed rows per flow and passes results on."""

    def __init__(self, forward: Callable[[BatchResult], None] | None = None) -> None:
        self.forward = forward
        self.rows: Counter[str] = Counter()
        self.dead_letters: Counter[str] = Counter()
        #: ``time.monotonic()`` of the last batch that committed rows
        self.last_rows_at = float("-inf")
        self._lock = threading.Lock()

    def __call__(self, result: BatchResult) -> None:
        with self._lock:
            self.rows[result.flow] += result.rows
            self.dead_letters[result.flow] += result.dlq_rows
            if result.rows or result.dlq_rows:
                self.last_rows_at = time.monotonic()
        if self.forward is not None:
            self.forward(result)

    def totals(self) -> tuple[int, int]:
        """Rows and dead letters committed so far (all flows)."""
        with self._lock:
            return sum(self.rows.values()), sum(self.dead_letters.values())


@dataclass(frozen=True)
class LakeCounts:
    """Rows of the ODS table and its dead-letter table."""

    ods: int = 0
    dlq: int = 0


def lake_counts(spark: SparkSession, catalog: str) -> LakeCounts:
    """ODS and DLQ rows now (0 for a table that does not exist yet)."""
    from icetide.devkit.demo.reconcile import DLQ, ODS

    def count(table: str) -> int:
        ident = f"{catalog}.{table}"
        if not spark.catalog.tableExists(ident):
            return 0
        return int(spark.sql(f"SELECT count(*) FROM {ident}").collect()[0][0])

    return LakeCounts(count(ODS), count(DLQ))


@dataclass(frozen=True)
class DemoReport:
    """What the demo produced, committed and found when it reconciled the lake."""

    dims: str
    generated: GenReport
    business: BusinessReport | None
    #: ODS/DLQ rows before this run (a resumed demo reconciles against baseline + produced)
    baseline: LakeCounts
    committed: dict[str, int]  # rows per flow, this run (continuous batches + final drain)
    dead_letters: int
    drained_rows: int  # of those, rows committed by the final drain
    checks: list[Check]
    #: the settings the demo ran with (kafka.bootstrap = its broker): get_spark(this)
    settings: Settings
    seconds: float
    shop: Shop | None = None
    phase_seconds: dict[str, float] = field(default_factory=dict)
    #: the corrections made at ODS mid-run (an erase, a product correction)
    edits: list[Edit] = field(default_factory=list)
    #: the warm-up before the measured window (None: the run stopped before it ended)
    warm_up: WarmUpReport | None = None
    #: the measured window (epoch ms): from the edits' settling to the end of the drain
    window: tuple[int, int] | None = None
    #: each table with a freshness target, judged over the window's commits
    freshness: list[TableStatus] = field(default_factory=list)
    #: the edits' phase (epoch ms), how it settled and each table's worst freshness in it
    #: (reported, not judged: a bulk correction, not the stream the targets are for)
    edits_window: tuple[int, int] | None = None
    edits_settled: WarmUpReport | None = None
    edits_freshness: list[TableStatus] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every reconciliation check passed (vacuously true when none ran)."""
        return all(check.ok for check in self.checks)

    def to_json(self) -> dict[str, object]:
        """A JSON-friendly form (no password)."""
        gen = self.generated
        return {
            "dims": self.dims, "seconds": round(self.seconds, 1), "ok": self.ok,
            "phase_seconds": dict(self.phase_seconds),
            "clicks": {"valid": gen.valid, "malformed": gen.malformed, "total": gen.total,
                       "delivery_errors": gen.delivery_errors, "rate": round(gen.rate, 1),
                       "seconds": round(gen.seconds, 1), "kinds": dict(gen.kinds)},
            "business": None if self.business is None else {
                "total": self.business.total, "counts": dict(self.business.counts)},
            "baseline": asdict(self.baseline),
            "committed": {"rows": dict(self.committed), "dead_letters": self.dead_letters,
                          "drained_rows": self.drained_rows},
            "checks": [asdict(check) for check in self.checks],
            "edits": [asdict(edit) for edit in self.edits],
            "warm_up": None if self.warm_up is None else asdict(self.warm_up),
            "window": None if self.window is None else {
                "start_ms": self.window[0], "end_ms": self.window[1]},
            "freshness": [_verdict(row) for row in self.freshness],
            "edits_phase": None if self.edits_window is None else {
                "start_ms": self.edits_window[0], "end_ms": self.edits_window[1],
                "settled": None if self.edits_settled is None else asdict(self.edits_settled),
                "freshness": [_verdict(row) for row in self.edits_freshness]},
            "mariadb": None if self.shop is None else {
                "host": self.shop.info.host, "port": self.shop.info.port,
                "database": self.shop.database, "seeded": self.shop.seeded},
        }


def _verdict(row: TableStatus) -> dict[str, object]:
    """One table's freshness over the measured window, for the JSON report."""
    window = row.window
    return {"table": row.table, "state": row.state, "target_s": row.target_s,
            "warn_s": row.warn_s, "worst_s": None if window is None else window.worst_s,
            "commits": 0 if window is None else window.commits}
