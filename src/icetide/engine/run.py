"""Run a loaded pipeline: compile its flows into generic flow loops and drive them.

Discovery runs each flow's query function once on an empty batch of every declared
source. That tells which sources the flow reads, which side tables (dead letters) it
emits to, and the schema it produces — from which the target tables are created with
the declared partitioning and properties. Then each flow runs in the generic loop
(:mod:`icetide.flows.loop`): ``--once`` in dependency order, continuously one thread
per flow.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.config import Settings
from icetide.engine.pacing import FreshnessPacer, FreshnessTarget, once_summary
from icetide.engine.quality import checker_for
from icetide.engine.targets import ensure_table, event_time_column, sink_for
from icetide.errors import IcetideError, PipelineError
from icetide.flows.context import BatchContext, bound, current_batch
from icetide.flows.loop import BatchResult, Flow, FlowLoop
from icetide.lake.dlq import ensure_dlq_table
from icetide.lake.sinks import SerializedSink
from icetide.model.source import BatchRange, Source
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.reader import set_reader
from icetide.pipelines.spec import FlowSpec, TableSpec, call_query
from icetide.runtime.leases import lease_key, leases_for
from icetide.sources.factory import build_source
from icetide.sources.iceberg import IcebergTableSource, flatten_changelog
from icetide.tables.changelog import CHANGELOG_SUFFIX, changelog_table_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Tables a compiled flow has seen to exist (bound while its transform runs): tables are
#: not dropped under a running flow, so each is looked up in the catalog once per flow.
_KNOWN_TABLES: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "icetide_known_tables", default=None)


def _exists(ctx: BatchContext, ident: str) -> bool:
    known = _KNOWN_TABLES.get()
    if known is not None and ident in known:
        return True
    found = bool(ctx.spark.catalog.tableExists(ident))
    if found and known is not None:
        known.add(ident)
    return found


def _read_table(name: str, streaming: bool) -> DataFrame:
    """``dp.read``: the table's current snapshot; ``dp.read_stream``: what is new since the
    flow's last commit (appended rows, or the changelog of a primary-key table)."""
    ctx = current_batch()
    ident = ctx.qualify(name)
    if not _exists(ctx, ident):
        raise MissingTable(ident)
    if not streaming:
        return ctx.table(name)
    catalog, rest = ident.split(".", 1)
    changelog = f"{catalog}.{changelog_table_name(rest)}"
    is_pk = _exists(ctx, changelog)
    source = IcebergTableSource(ctx.spark, changelog if is_pk else ident)
    if source.key not in ctx.sources:  # discovery: first sight of this input
        start = source.initial_position()
        ctx.add_source(source, source.plan_to(start, start))
    rows = ctx.read_source(source.key)
    if not is_pk:
        return rows
    columns = [f.name for f in ctx.spark.table(ident).schema.fields]
    return flatten_changelog(rows, columns)


class MissingTable(PipelineError):
    """A flow reads a table that does not exist (yet)."""

    def __init__(self, ident: str) -> None:
        super().__init__(
            f"table {ident} does not exist: create it (another flow of the pipeline, "
            "`icetide seed dims`, or a CDC flow) before the flows that read it"
        )
        self.ident = ident


_hook_lock = threading.Lock()
_hook_users: list[object] = []  # one entry per active table_reader() block


@contextmanager
def table_reader() -> Iterator[None]:
    """Install the ``dp.read`` hook: tables resolve to their current snapshot.

    Flows of a continuous run (and several pipelines in one process) enter this from
    many threads at once; the hook is process-wide, so the first block in installs it
    and only the last one out restores the previous hook.
    """
    token = object()
    with _hook_lock:
        if not _hook_users:
            _hook_users.append(set_reader(_read_table))  # slot 0: the previous hook
        _hook_users.append(token)
    try:
        yield
    finally:
        with _hook_lock:
            _hook_users.remove(token)
            if len(_hook_users) == 1:
                set_reader(_hook_users.pop())  # type: ignore[arg-type]


@dataclass(frozen=True)
class Discovery:
    """What running a flow on an empty batch revealed."""

    sources: Mapping[str, Source]
    side_tables: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...] = ()  # lake tables read (db.table), for ordering


def _inputs(ctx: BatchContext) -> tuple[str, ...]:
    """Lake tables the flow read, as ``db.table`` (a changelog counts as its table)."""
    tables = set(ctx.looked_up)
    for key in ctx.accessed:
        src = ctx.sources[key]
        if isinstance(src, IcebergTableSource):
            tables.add(src.ident)
    return tuple(sorted({t.split(".", 1)[1].removesuffix(CHANGELOG_SUFFIX) for t in tables}))


class _EmptyBatches(Mapping[str, BatchRange]):
    """An empty batch per source, planned only when the flow reads that source: a source
    no flow reads (a database for CDC flows that are switched off) is never opened."""

    def __init__(self, sources: Mapping[str, Source]) -> None:
        self._sources = sources
        self._planned: dict[str, BatchRange] = {}

    def __getitem__(self, key: str) -> BatchRange:
        if key not in self._planned:
            src = self._sources[key]
            start = src.initial_position()
            self._planned[key] = src.plan_to(start, start)
        return self._planned[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


class PipelineRun:
    """One pipeline on one SparkSession."""

    def __init__(self, spark: SparkSession, settings: Settings, graph: PipelineGraph,
                 only: Sequence[str] = (), trigger_interval: float | None = None) -> None:
        self.spark = spark
        self._trigger_interval = trigger_interval
        self.settings = settings
        self.graph = graph
        self.catalog = graph.spec.catalog or settings.catalog.name
        self.sources: dict[str, Source] = {
            name: build_source(name, cfg, settings) for name, cfg in graph.spec.sources.items()
        }
        self.aliases = {name: src.key for name, src in self.sources.items()}
        self.flows = self._select(only)
        self._compiled: list[Flow] | None = None

    def _select(self, only: Sequence[str]) -> list[FlowSpec]:
        order = [self.graph.flows[name] for name in self.graph.flow_order()]
        names = {f.name for f in order} | {f.name.rsplit(".", 1)[-1] for f in order}
        unknown = sorted(set(only) - names)
        if unknown:
            raise PipelineError(
                f"no flow named {unknown} in pipeline {self.graph.spec.name!r}; flows: "
                f"{[f.name for f in order]}"
            )
        wanted = set(only)
        return [f for f in order
                if not wanted or f.name in wanted or f.name.rsplit(".", 1)[-1] in wanted]

    def qualify(self, name: str) -> str:
        return name if name.count(".") >= 2 else f"{self.catalog}.{name}"

    def trigger_interval(self) -> float:
        """Explicit override, else the pipeline's default, else ``flows.trigger_interval``."""
        return (self._trigger_interval or self.graph.spec.defaults.trigger_interval
                or self.settings.flows.trigger_interval)

    # -- discovery and tables --------------------------------------------------------
    def discover(self, spec: FlowSpec) -> Discovery:
        """Run ``spec``'s query on an empty batch of every source (creates nothing)."""
        if spec.kind not in ("append", "batch") or spec.query is None:
            raise PipelineError(
                f"flow {spec.name!r} is a {spec.kind} flow without a query function; "
                "only query flows are discovered"
            )
        by_key = {src.key: src for src in self.sources.values()}
        ctx = BatchContext(self.spark, spec.name, self.catalog, by_key, _EmptyBatches(by_key),
                           self.graph.spec.configuration, self.aliases)
        try:
            with bound(ctx), table_reader():
                out = call_query(spec.query, self.spark)
            columns = tuple((f.name, f.dataType.simpleString()) for f in out.schema.fields)
            used = {key: ctx.sources[key] for key in sorted(ctx.accessed)}
            return Discovery(used, tuple(ctx.side_outputs), columns, _inputs(ctx))
        finally:
            ctx.release()

    def ensure_target(self, table: TableSpec, found: Discovery) -> str:
        """Create the flow's target (and side tables) if missing; returns the identifier."""
        ident = self.qualify(table.name)
        ensure_table(self.spark, ident, table, found.columns)
        for side in found.side_tables:
            ensure_dlq_table(self.spark, side)
        return ident

    def compile(self, spec: FlowSpec) -> Flow:
        """Discover, create tables, and build the generic ``Flow`` of ``spec``."""
        return self._compile(spec)[0]

    def _compile(self, spec: FlowSpec) -> tuple[Flow, tuple[str, ...]]:
        if spec.kind == "auto_cdc":
            from icetide.engine.compile_cdc import compile_auto_cdc

            return compile_auto_cdc(self, spec), spec.static_inputs
        if spec.kind == "batch":  # a materialized view: refreshed when its inputs change
            from icetide.engine.compile_refresh import compile_materialized_view

            return compile_materialized_view(self, spec)
        found = self.discover(spec)
        table = self.graph.table(spec.target)
        ident = self.ensure_target(table, found)
        query = spec.query
        assert query is not None

        known: set[str] = set()

        def transform(ctx: BatchContext) -> DataFrame:
            token = _KNOWN_TABLES.set(known)
            try:
                with table_reader():
                    return call_query(query, ctx.spark)
            finally:
                _KNOWN_TABLES.reset(token)

        return Flow(
            name=spec.name, target=ident, sources=dict(found.sources), transform=transform,
            sink=SerializedSink.when_shared(  # flows into one table commit in turn
                sink_for(ident, table, [c for c, _ in found.columns]),
                sum(f.target == spec.target for f in self.graph.flows.values())),
            side_tables=found.side_tables,
            event_time_column=event_time_column(table),
            checker=checker_for(table.name, table.expectations),
            max_records=self.settings.kafka.max_records_per_trigger, catalog=self.catalog,
            config=self.graph.spec.configuration, aliases=self.aliases,
        ), found.inputs

    def compile_all(self) -> list[Flow]:
        """Compile every selected flow, producers before the flows that read their tables.

        A flow whose input is a table of this pipeline that does not exist yet waits until
        the flow creating it has been compiled; the result is in dependency order. Done
        once per run: a drain after a continuous run reuses the compiled flows.
        """
        if self._compiled is None:
            self._compiled = self._compile_all()
        return self._compiled

    def _compile_all(self) -> list[Flow]:
        pending, flows, inputs = list(self.flows), {}, {}
        while pending:
            waiting: list[FlowSpec] = []
            for spec in pending:
                try:
                    flows[spec.name], inputs[spec.name] = self._compile(spec)
                except MissingTable as exc:
                    if exc.ident.split(".", 1)[1] not in self.graph.tables:
                        raise
                    waiting.append(spec)
            if len(waiting) == len(pending):
                raise PipelineError(
                    f"flows {[f.name for f in waiting]} read pipeline tables that no flow "
                    "creates: check for a cycle or a missing producer flow")
            pending = waiting
        order = self.graph.with_inputs(inputs).flow_order()
        return [flows[name] for name in order if name in flows]

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
                    on_batch: Callable[[BatchResult], None] | None = None) -> None:
        """One thread per flow until ``stop`` is set; the first flow error stops them all."""
        with self.leases():
            self._run_threads(self.compile_all(), stop, on_batch)

    def _run_threads(self, flows: list[Flow], stop: threading.Event,
                     on_batch: Callable[[BatchResult], None] | None) -> None:
        errors: list[BaseException] = []

        def drive(flow: Flow) -> None:
            try:
                loop = FlowLoop(self.spark, flow)
                pacer = FreshnessPacer(loop, self.freshness_target(flow), self.trigger_interval())
                loop.run_forever(self.trigger_interval(), stop, on_batch, pace=pacer)
            except BaseException as exc:
                log.error("flow %s stopped: %s", flow.name, exc)
                errors.append(exc)
                stop.set()

        threads = [threading.Thread(target=drive, args=(f,), name=f"flow-{f.name}", daemon=True)
                   for f in flows]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
        if errors:
            first = errors[0]
            raise first if isinstance(first, IcetideError) else PipelineError(
                f"a flow failed: {first!r}") from first

    def close(self) -> None:
        for src in self.sources.values():
            src.close()

