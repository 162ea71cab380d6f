"""Run a loaded pipeline: compile its flows into generic flow loops and drive them.

Discovery runs each flow's query function once on an empty batch of every declared
source. That tells which sources the flow reads, which side tables (dead letters) it
emits to, and the schema it produces — from which the target tables are created with
the declared partitioning and properties. Then each flow runs in the generic loop
(:mod:`icetide.flows.loop`): ``--once`` in dependency order, continuously one thread
per flow.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.config import Settings
from icetide.errors import IcetideError, PipelineError
from icetide.flows.context import BatchContext, bound, current_batch
from icetide.flows.dlq import ensure_dlq_table
from icetide.flows.loop import BatchResult, Flow, FlowLoop
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.reader import set_reader
from icetide.pipelines.spec import FlowSpec, TableSpec, call_query
from icetide.sources.base import Source
from icetide.sources.factory import build_source
from icetide.tables.ddl import APPEND_TABLE_PROPERTIES, create_table_sql
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

EVENT_TIME_PROPERTY = "icetide.event-time-column"
_TIME_TRANSFORMS = ("years", "months", "days", "hours")


def event_time_column(table: TableSpec) -> str | None:
    """The column freshness is measured on: declared by property, else the time partition."""
    declared = table.table_properties.get(EVENT_TIME_PROPERTY)
    if declared:
        return declared
    for part in table.partition_cols:
        if part.transform in _TIME_TRANSFORMS:
            return part.source_column
    return None


def _read_table(name: str, streaming: bool) -> DataFrame:
    if streaming:
        raise PipelineError(
            f"dp.read_stream({name!r}): incremental table-to-table reads are not available yet; "
            "use dp.read() for a lookup of the table's current snapshot"
        )
    return current_batch().table(name)


@contextmanager
def table_reader() -> Iterator[None]:
    """Install the ``dp.read`` hook: tables resolve to their current snapshot."""
    previous = set_reader(_read_table)
    try:
        yield
    finally:
        set_reader(previous)


@dataclass(frozen=True)
class Discovery:
    """What running a flow on an empty batch revealed."""

    sources: tuple[str, ...]
    side_tables: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]


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
        if spec.kind != "append" or spec.query is None:
            raise PipelineError(
                f"flow {spec.name!r} is a {spec.kind} flow; this runner executes append flows "
                "(@dp.table / @dp.append_flow) so far"
            )
        by_key = {src.key: src for src in self.sources.values()}
        batches = {}
        for key, src in by_key.items():
            start = src.initial_position()
            batches[key] = src.plan_to(start, start)
        ctx = BatchContext(self.spark, spec.name, self.catalog, by_key, batches,
                           self.graph.spec.configuration, self.aliases)
        try:
            with bound(ctx), table_reader():
                out = call_query(spec.query, self.spark)
            columns = tuple((f.name, f.dataType.simpleString()) for f in out.schema.fields)
            return Discovery(tuple(sorted(ctx.accessed)), tuple(ctx.side_outputs), columns)
        finally:
            ctx.release()

    def ensure_target(self, table: TableSpec, found: Discovery) -> str:
        """Create the flow's target (and its side tables) if missing; returns the identifier."""
        ident = self.qualify(table.name)
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote_qualified(ident.rsplit('.', 1)[0])}")
        props = {**APPEND_TABLE_PROPERTIES, **table.table_properties}
        event_col = event_time_column(table)
        if event_col:
            props[EVENT_TIME_PROPERTY] = event_col
        self.spark.sql(create_table_sql(
            ident, found.columns, partition_sql=[p.to_sql() for p in table.partition_cols],
            properties=props, comment=table.comment,
        ))
        for side in found.side_tables:
            ensure_dlq_table(self.spark, side)
        return ident

    def compile(self, spec: FlowSpec) -> Flow:
        """Discover, create tables, and build the generic ``Flow`` of ``spec``."""
        found = self.discover(spec)
        table = self.graph.table(spec.target)
        ident = self.ensure_target(table, found)
        query = spec.query
        assert query is not None

        def transform(ctx: BatchContext) -> DataFrame:
            with table_reader():
                return call_query(query, ctx.spark)

        by_key = {src.key: src for src in self.sources.values()}
        return Flow(
            name=spec.name, target=ident, sources={k: by_key[k] for k in found.sources},
            transform=transform, side_tables=found.side_tables,
            event_time_column=event_time_column(table),
            max_records=self.settings.kafka.max_records_per_trigger, catalog=self.catalog,
            config=self.graph.spec.configuration, aliases=self.aliases,
        )

    # -- driving ---------------------------------------------------------------------
    def run_once(self, on_batch: Callable[[BatchResult], None] | None = None
                 ) -> dict[str, list[BatchResult]]:
        """Process everything available now, flow by flow in dependency order."""
        done: dict[str, list[BatchResult]] = {}
        for spec in self.flows:
            results = FlowLoop(self.spark, self.compile(spec)).run_until_caught_up()
            for result in results:
                if on_batch is not None:
                    on_batch(result)
            done[spec.name] = results
        return done

    def run_forever(self, stop: threading.Event,
                    on_batch: Callable[[BatchResult], None] | None = None) -> None:
        """One thread per flow until ``stop`` is set; the first flow error stops them all."""
        flows = [self.compile(spec) for spec in self.flows]
        errors: list[BaseException] = []

        def drive(flow: Flow) -> None:
            try:
                FlowLoop(self.spark, flow).run_forever(self.trigger_interval(), stop, on_batch)
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

