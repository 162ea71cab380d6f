"""The demo's warm-up: the pipeline runs on live clicks before the measured window opens.

A freshly started pipeline's first minute is slower than the rest: a cold JVM (the JIT
still interpreting, Janino compiling each plan's first run), every flow's first compile
and first commit, and the backlog the clicks built up meanwhile (docs/benchmarks.md, the
restart row). The demo judges its freshness over a window it measures, so it does not
open that window before the pipeline is past that phase: the generators and every flow
run as they will, and the window opens once

* every flow of the run has committed a batch (every layer compiled and committed), and
* every flow whose table has a freshness target has committed at least
  :data:`WARM_BATCHES` batches with rows, the newest within its target (past the backlog
  of the start),

or after :data:`WARM_UP_MAX_S` in any case (then the report says which flows were not
ready). What the warm-up committed stays in the lake and is reconciled like the rest;
only the freshness verdicts leave it out: :func:`window_freshness` judges each table with
a target over the commits of the measured window, as ``icetide status`` judges a stopped
table over a window of its commits (:mod:`icetide.app.window`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from icetide.app.status import TableStatus, collect_status, pipeline_scope
from icetide.config import Settings
from icetide.engine.pacing import FreshnessTarget
from icetide.flows.loop import BatchResult
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.spec import FlowSpec
from icetide.runtime.catalogs import pyiceberg_catalog

#: Seconds the warm-up lasts at most (a machine too loaded to get there: the window opens
#: anyway, and the report names the flows that were not ready).
WARM_UP_MAX_S = 120.0
#: Batches with rows a flow with a freshness target commits before it counts as warm.
WARM_BATCHES = 2


@dataclass
class _FlowWarmth:
    batches: int = 0  # committed batches
    with_rows: int = 0  # of those, with rows
    #: the freshness of its newest batch that made newer data visible (commit − event)
    achieved_s: float | None = None
    newest_event_ms: int = -1


@dataclass(frozen=True)
class WarmUpReport:
    """How the warm-up went: its length, whether every flow got ready, which did not."""

    seconds: float
    ready: bool
    #: flows not ready when the warm-up ended (WARM_UP_MAX_S or a stop)
    not_ready: tuple[str, ...] = ()
    #: committed batches per flow during the warm-up
    batches: Mapping[str, int] = field(default_factory=dict)


class WarmUp:
    """An ``on_batch`` callback (passing results on to ``forward``) that tells when the
    run is warm: :meth:`wait` returns then, or at :data:`WARM_UP_MAX_S`, or on ``stop``.

    ``targets``: flow → the freshness target of its table (None: no target), for every
    continuous flow of the run."""

    def __init__(self, targets: Mapping[str, float | None],
                 forward: Callable[[BatchResult], None] | None = None,
                 batches: int = WARM_BATCHES) -> None:
        self.targets = dict(targets)
        self.forward = forward
        self.needed = batches
        self.flows = {name: _FlowWarmth() for name in self.targets}
        self.started = time.monotonic()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self.report: WarmUpReport | None = None
        if not self.targets:
            self._ready.set()

    def __call__(self, result: BatchResult) -> None:
        with self._lock:
            warmth = self.flows.setdefault(result.flow, _FlowWarmth())
            warmth.batches += 1
            if result.rows or result.dlq_rows:
                warmth.with_rows += 1
            event_ms = result.max_event_time_ms
            if event_ms is not None and event_ms > warmth.newest_event_ms:  # as app/window.py
                warmth.newest_event_ms = event_ms
                warmth.achieved_s = max(0.0, time.time() - event_ms / 1000)
            if not self.waiting():
                self._ready.set()
        if self.forward is not None:
            self.forward(result)

    def _warm(self, flow: str) -> bool:
        warmth, target = self.flows[flow], self.targets.get(flow)
        if target is None:
            return warmth.batches > 0
        return (warmth.with_rows >= self.needed and warmth.achieved_s is not None
                and warmth.achieved_s <= target)

    def waiting(self) -> list[str]:
        """The flows not warm yet, sorted."""
        return sorted(flow for flow in self.targets if not self._warm(flow))

    def rearm(self, batches: int | None = None) -> None:
        """Warm again from now on: each flow with a target needs ``batches`` (default:
        as many as before) batches with rows committed from here, the newest within its
        target (the demo's edits: the measured window opens once every layer is back
        within its target). What a flow has made visible is kept: only newer events count
        as freshness."""
        with self._lock:
            self.needed = self.needed if batches is None else batches
            for warmth in self.flows.values():
                warmth.with_rows, warmth.achieved_s = 0, None
            self.started = time.monotonic()
            self._ready.clear()
            if not self.targets:
                self._ready.set()

    def wait(self, stop: threading.Event, limit: float = WARM_UP_MAX_S) -> WarmUpReport:
        """Until the run is warm, ``limit`` seconds have passed or ``stop`` is set; what
        the wait did (the first one, the warm-up's, is kept in :attr:`report`)."""
        deadline = self.started + limit
        while not self._ready.is_set() and not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._ready.wait(min(left, 0.2))
        with self._lock:
            waiting = self.waiting()
            report = WarmUpReport(
                seconds=round(time.monotonic() - self.started, 1), ready=not waiting,
                not_ready=tuple(waiting),
                batches={flow: w.batches for flow, w in sorted(self.flows.items())})
        if self.report is None:
            self.report = report
        return report


def flow_targets(graph: PipelineGraph, flows: Sequence[FlowSpec]) -> dict[str, float | None]:
    """Each continuous flow of ``flows`` → the freshness target of its table (None: none)."""
    defaults = graph.spec.defaults
    return {spec.name: FreshnessTarget.of(graph.tables.get(spec.target), defaults).target_s
            for spec in flows if not spec.once}


def window_freshness(settings: Settings, graph: PipelineGraph,
                     window: tuple[int, int] | None) -> list[TableStatus]:
    """Each table of ``graph`` with a freshness target, judged over the commits of the
    measured ``window`` (epoch ms) as a stopped table (none: no window opened)."""
    if window is None:
        return []
    stored, targets = pipeline_scope(graph)
    judged = [name for name in stored if targets[name] != FreshnessTarget()]
    return collect_status(pyiceberg_catalog(settings), judged, targets=targets,
                          running=lambda _table, _flow: False, window=window)
