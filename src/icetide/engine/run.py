"""Run a loaded pipeline: compile its flows into generic flow loops and drive them.

Discovery runs each flow's query function once on an empty batch of every declared
source. That tells which sources the flow reads, which side tables (dead letters) it
emits to, and the schema it produces — from which the target tables are created with
the declared partitioning and properties. Then each flow runs in the generic loop
(:mod:`icetide.flows.loop`): ``--once`` in dependency order, continuously as one DAG
(:mod:`icetide.engine.scheduler`). ``with PipelineRun(...) as run:`` releases the
sources' clients at the end.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING

from icetide.config import Settings
from icetide.engine.cluster_info import track_runtime
from icetide.engine.compile import compile_flow
from icetide.engine.dag import link
from icetide.engine.discovery import Discovery, discover
from icetide.engine.hooks import MissingTable
from icetide.engine.maintenance_schedule import MaintenanceSchedule
from icetide.engine.order import depths
from icetide.engine.pacing import FreshnessPacer, FreshnessTarget, once_summary
from icetide.engine.scheduler import DagScheduler, Slot, default_concurrency
from icetide.engine.targets import check_declared_schema, ensure_table
from icetide.errors import PipelineError, listed
from icetide.flows.loop import BatchResult, Flow, FlowLoop
from icetide.lake.dlq import ensure_dlq_table
from icetide.lake.flow_errors import record_flow_error
from icetide.model.source import AnySource
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.spec import FlowSpec, TableSpec
from icetide.runtime.leases import lease_key, leases_for
from icetide.runtime.startup import phase
from icetide.runtime.warmup import warm_python_workers
from icetide.sources.registry import build_sources

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icetide.maintainer import AnyReport

log = logging.getLogger(__name__)

#: Flows compiled at once. One: a flow reading a table of this pipeline must see it as
#: its producer's compile left it — two at once let ``dws.profile_member`` find
#: ``dim_db.user_member`` created but its changelog not yet, and compile to read the
#: table's appends instead of its changes (the demo's user_profile lost its members).
#: The first compiled still start running while the others compile.
COMPILE_THREADS = 1


def ship_pipeline_code(graph: PipelineGraph) -> None:
    """Functions of a pipeline's files travel to executors by value: their modules are not
    importable there (PySpark's cloudpickle is told so)."""
    from pyspark import cloudpickle

    for name in graph.modules:
        module = sys.modules.get(name)
        if module is not None:
            cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def select_flows(graph: PipelineGraph, only: Sequence[str] = ()) -> list[FlowSpec]:
    """The flows named in ``only`` (full or short names; all when empty), in run order;
    an unknown name raises :class:`PipelineError` naming it and the pipeline's flows."""
    order = [graph.flows[name] for name in graph.flow_order()]
    names = {f.name for f in order} | {f.name.rsplit(".", 1)[-1] for f in order}
    unknown = sorted(set(only) - names)
    if unknown:
        raise PipelineError(
            f"no flow named {listed(unknown)} in pipeline {graph.spec.name!r}; its flows: "
            f"{listed(f.name for f in order)}")
    wanted = set(only)
    return [f for f in order
            if not wanted or f.name in wanted or f.name.rsplit(".", 1)[-1] in wanted]


class PipelineRun:
    """One pipeline on one SparkSession."""

    def __init__(self, spark: SparkSession, settings: Settings, graph: PipelineGraph,
                 only: Sequence[str] = (), trigger_interval: float | None = None) -> None:
        self.spark = spark
        ship_pipeline_code(graph)
        self._trigger_interval = trigger_interval
        self.settings = settings
        self.graph = graph
        self.catalog = graph.spec.catalog or settings.catalog.name
        self.sources: dict[str, AnySource] = build_sources(graph, settings)
        phase("sources")
        self.aliases = {name: src.key for name, src in self.sources.items()}
        self.flows = self._select(only)
        self._compiled: list[Flow] | None = None

    def _select(self, only: Sequence[str]) -> list[FlowSpec]:
        return select_flows(self.graph, only)

    def qualify(self, name: str) -> str:
        return name if name.count(".") >= 2 else f"{self.catalog}.{name}"

    def trigger_interval(self) -> float:
        """Explicit override, else the pipeline's default, else ``flows.trigger_interval``."""
        return (self._trigger_interval or self.graph.spec.defaults.trigger_interval
                or self.settings.flows.trigger_interval)

    # -- discovery and tables --------------------------------------------------------
    @property
    def max_records(self) -> int | None:
        return self.settings.kafka.max_records_per_trigger

    def discover(self, spec: FlowSpec) -> Discovery:
        """Run ``spec``'s query on an empty batch of every source (creates nothing)."""
        return discover(self.spark, spec, self.sources, self.catalog,
                        self.graph.spec.configuration, self.aliases)

    def ensure_target(self, table: TableSpec, found: Discovery) -> str:
        """Create the flow's target (and side tables) if missing, else evolve it to fit the
        flow (engine/evolve.py), once its output matches a declared ``schema=``; returns
        the identifier."""
        ident = self.qualify(table.name)
        check_declared_schema(table, found.columns)
        ensure_table(self.spark, ident, table, found.columns, evolve=True)
        for side in found.side_tables:
            ensure_dlq_table(self.spark, side)
        return ident

    def compile(self, spec: FlowSpec) -> Flow:
        """Discover, create tables, and build the generic ``Flow`` of ``spec``."""
        return self._compile(spec)[0]

    def _compile(self, spec: FlowSpec) -> tuple[Flow, tuple[str, ...]]:
        return compile_flow(self, spec)

    def compile_all(self, on_compiled: Callable[[Flow], None] | None = None) -> list[Flow]:
        """Compile every selected flow, :data:`COMPILE_THREADS` at a time, the flows whose
        table has a freshness target first; ``on_compiled`` gets each flow as soon as it
        is compiled (in a compiling thread).

        A flow whose input is a table of this pipeline that does not exist yet waits until
        the flow creating it has been compiled; the result is in dependency order. Done
        once per run: a drain after a continuous run reuses the compiled flows (and
        ``on_compiled`` gets each of them at once).
        """
        if self._compiled is None:
            self._compiled = self._compile_all(on_compiled)
        elif on_compiled is not None:
            for flow in self._compiled:
                on_compiled(flow)
        return self._compiled

    def _compile_order(self) -> list[FlowSpec]:
        """The selected flows, those whose table has a freshness target first (their
        first batches are what a (re)start is waited for by), the nearest to the sources
        first among them (:mod:`icetide.engine.order`), else in run order."""
        hops = depths(self.graph.flows, self.graph.tables)

        def key(spec: FlowSpec) -> tuple[bool, int]:
            table = self.graph.tables.get(spec.target)
            untargeted = FreshnessTarget.of(table, self.graph.spec.defaults).target_s is None
            return untargeted, hops.get(spec.name, 0)
        return sorted(self.flows, key=key)

    def _compile_all(self, on_compiled: Callable[[Flow], None] | None) -> list[Flow]:
        pending = self._compile_order()
        flows: dict[str, Flow] = {}
        inputs: dict[str, tuple[str, ...]] = {}
        with ThreadPoolExecutor(COMPILE_THREADS, thread_name_prefix="compile") as pool:
            while pending:
                waiting = self._compile_round(pool, pending, flows, inputs, on_compiled)
                if len(waiting) == len(pending):
                    raise PipelineError(
                        f"flows {listed(f.name for f in waiting)} read pipeline tables that no "
                        "flow creates: check for a cycle or a missing producer flow")
                pending = waiting
        order = self.graph.with_inputs(inputs).flow_order()
        phase("flows_compiled")
        return [flows[name] for name in order if name in flows]

    def _compile_round(self, pool: ThreadPoolExecutor, pending: list[FlowSpec],
                       flows: dict[str, Flow], inputs: dict[str, tuple[str, ...]],
                       on_compiled: Callable[[Flow], None] | None) -> list[FlowSpec]:
        """Compile ``pending`` at once; the flows that must wait for a producer's table."""
        futures = {pool.submit(self._compile, spec): spec for spec in pending}
        waiting: list[FlowSpec] = []
        for future in as_completed(futures):
            spec = futures[future]
            try:
                flows[spec.name], inputs[spec.name] = future.result()
            except MissingTable as exc:
                if exc.ident.split(".", 1)[1] not in self.graph.tables:
                    raise
                waiting.append(spec)
                continue
            phase(f"compiled {spec.name}")
            if on_compiled is not None:
                on_compiled(flows[spec.name])
        return waiting

    # -- driving ---------------------------------------------------------------------
    def freshness_target(self, flow: Flow) -> FreshnessTarget:
        """The freshness target of ``flow``'s table (else the pipeline default)."""
        spec = self.graph.flows.get(flow.name)
        table = self.graph.tables.get(spec.target) if spec is not None else None
        return FreshnessTarget.of(table, self.graph.spec.defaults)

    def run_once(self, on_batch: Callable[[BatchResult], None] | None = None
                 ) -> dict[str, list[BatchResult]]:
        """Process everything available now, flow by flow in dependency order."""
        done: dict[str, list[BatchResult]] = {}
        with self.leases():
            for flow in self.compile_all():
                loop = FlowLoop(self.spark, flow)
                track_runtime([loop])
                loop.summary_extra.update(once_summary(self.freshness_target(flow)))
                results = loop.run_until_caught_up()
                for result in results:
                    if on_batch is not None:
                        on_batch(result)
                done[flow.name] = results
        return done

    def leases(self) -> AbstractContextManager[None]:
        """Exclusive leases on the selected flows: a second run of one of them stops at
        once, before it creates or reads anything."""
        keys = [lease_key(self.qualify(f.target), f.name) for f in self.flows]
        return leases_for(self.settings).hold(keys)

    def run_forever(self, stop: threading.Event,
                    on_batch: Callable[[BatchResult], None] | None = None, *,
                    on_maintained: Callable[[AnyReport], None] | None = None) -> None:
        """The selected flows as one DAG (:mod:`icetide.engine.scheduler`) until ``stop``
        is set; the first flow error stops them all. ``on_maintained``: after each
        maintenance pass of a table the run writes."""
        with self.leases():
            phase("leases")
            warm_python_workers(self.spark, sorted({m for s in self.sources.values()
                                                    for m in s.worker_modules}))
            loops: list[FlowLoop] = []
            scheduler = self.scheduler(track_runtime(loops, on_batch))
            starter = threading.Thread(target=self._start_flows, name="compile-flows",
                                       args=(scheduler, loops, on_maintained), daemon=True)
            starter.start()
            try:
                scheduler.run(stop)
            finally:
                stop.set()
                starter.join()

    def _start_flows(self, scheduler: DagScheduler, loops: list[FlowLoop],
                     on_maintained: Callable[[AnyReport], None] | None) -> None:
        """Each flow joins the running scheduler as soon as it is compiled (a restart's
        first batches do not wait for every flow's analysis); table maintenance once
        all are (never before the first batches)."""
        def join(flow: Flow) -> None:
            (slot,) = self.slots([flow])
            track_runtime([slot.loop])  # the runtime in its markers from its first batch
            loops.append(slot.loop)
            scheduler.add([slot])
        try:
            self.compile_all(join)
            scheduler.maintenance = self._maintenance_schedule(on_maintained)
            phase("maintenance_schedule")
        except BaseException as exc:  # the run stops with it, as with a flow's error
            scheduler.fail(exc)

    def _maintenance_schedule(
            self, on_maintained: Callable[[AnyReport], None] | None = None
    ) -> MaintenanceSchedule | None:
        """Maintenance of the tables this run writes (``maintenance.enabled``)."""
        if not self.settings.maintenance.enabled:
            return None
        try:
            return MaintenanceSchedule(self.spark, self, on_maintained=on_maintained)
        except Exception as exc:  # maintenance never stops the flows
            log.error("table maintenance is off for this run: %s", exc)
            return None

    def scheduler(self, on_batch: Callable[[BatchResult], None] | None = None
                  ) -> DagScheduler:
        """An empty scheduler for this run (flows join it as they are compiled):
        ``flows.concurrency`` workers, ``flows.extra_workers`` deciding who takes them."""
        return DagScheduler(self.spark, [], self.concurrency(), on_batch, self._record_error,
                            extra_workers=self.settings.flows.extra_workers)

    def concurrency(self) -> int:
        """Batches run at once: ``flows.concurrency``, else one per core."""
        return self.settings.flows.concurrency or default_concurrency(os.cpu_count())

    def slots(self, flows: list[Flow]) -> list[Slot]:
        """Scheduling state per flow, producers linked to the flows reading their tables."""
        slots = []
        for flow in flows:
            loop = FlowLoop(self.spark, flow, self.settings.flows.max_failures)
            pacer = FreshnessPacer(loop, self.freshness_target(flow), self.trigger_interval())
            slots.append(Slot(loop, pacer, max(self.trigger_interval(), flow.min_spacing),
                              polls=True))
        inputs = {f.name: frozenset(t for src in f.sources.values() for t in src.lake_inputs())
                  for f in flows}
        outputs = {f.name: frozenset(f.writes()) for f in flows}
        link(slots, inputs, outputs)
        for slot in slots:
            slot.writes, slot.reads = outputs[slot.name], inputs[slot.name]
        return slots

    def _record_error(self, loop: FlowLoop, exc: BaseException) -> None:
        record_flow_error(self.spark, loop.flow.target, loop.flow.name, exc)

    def close(self) -> None:
        """Release the sources' clients (idempotent)."""
        for src in self.sources.values():
            src.close()

    def __enter__(self) -> PipelineRun:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

