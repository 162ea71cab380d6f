"""Compile ``@dp.materialized_view`` declarations into refresh flows.

A materialized view is a Spark *batch* job whose result replaces the table:

* source: :class:`~icetide.sources.refresh.SnapshotIdsSource` over the tables the query
  reads with ``dp.read`` (found by discovery) — a refresh is planned when any of their
  snapshot ids changed since the ids recorded in the view's last marker;
* transform: the query function, with every ``dp.read(table)`` pinned to the planned
  snapshot id (so a replay recomputes the same result);
* sink: :class:`~icetide.lake.sinks.OverwriteSink` — one ``overwrite`` commit holding
  the whole result and the marker (input snapshot ids).

So ``icetide run --once`` refreshes stale views after the flows feeding them, and the
continuous mode refreshes a view right after an input changed, no more often than the
table property ``icetide.refresh-interval`` (e.g. ``"1 minute"``: the flow's minimum
spacing in the pipeline scheduler).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icetide.engine.compile.context import CompileContext
from icetide.engine.hooks import table_reader
from icetide.engine.targets import event_time_column
from icetide.errors import PipelineError, listed
from icetide.flows.context import BatchContext, bound
from icetide.flows.loop import Flow
from icetide.lake.sinks import OverwriteSink
from icetide.model.keys import TableProperties
from icetide.pipelines.spec import FlowSpec, call_query, parse_seconds
from icetide.sources.refresh import SnapshotIdsSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icetide.pipelines.lookup import LookupSpec


log = logging.getLogger(__name__)



@dataclass
class PinnedBatchContext(BatchContext):
    """A batch context whose ``table()`` reads each input at a fixed snapshot id."""

    pins: Mapping[str, int | None] = field(default_factory=dict)

    def table(self, name: str) -> DataFrame:
        ident = self.qualify(name)
        self.looked_up.add(ident)
        snapshot = self.pins.get(ident)
        if snapshot is None:
            if ident not in self.pins:
                log.warning("materialized view flow %s reads %s, which discovery did not see: "
                            "reading its current snapshot", self.flow, ident)
            return self.spark.table(ident)
        return (self.spark.read.format("iceberg").option("snapshot-id", str(snapshot))
                .load(ident))

    def lookup_join(self, left: DataFrame, name: str, spec: LookupSpec) -> DataFrame:
        return spec.join(left, self.table(name))  # at its pinned snapshot


def _refresh_interval(ctx: CompileContext, spec: FlowSpec) -> float:
    props = ctx.graph.table(spec.target).table_properties
    raw = props.get(TableProperties.REFRESH_INTERVAL)
    return 0.0 if raw is None else parse_seconds(raw, TableProperties.REFRESH_INTERVAL) or 0.0


def compile_materialized_view(ctx: CompileContext, spec: FlowSpec) -> tuple[Flow, tuple[str, ...]]:
    """The refresh flow of a materialized view and the tables it reads (``db.table``)."""
    found = ctx.discover(spec)
    if found.sources or found.side_tables:
        raise PipelineError(
            f"materialized view {spec.target} reads streams {listed(sorted(found.sources))} "
            f"or emits to side tables {listed(found.side_tables)}: a materialized view is a batch "
            "query — read its inputs with dp.read('db.table'), or declare it with @dp.table"
        )
    table = ctx.graph.table(spec.target)
    ident = ctx.ensure_target(table, found)
    source = SnapshotIdsSource(ctx.spark, ident, [ctx.qualify(t) for t in found.inputs])
    query = spec.query
    assert query is not None

    def transform(ctx: BatchContext) -> DataFrame:
        pinned = PinnedBatchContext(ctx.spark, ctx.flow, ctx.catalog, ctx.sources,
                                    ctx.batches, ctx.config, ctx.aliases,
                                    pins=dict(ctx.batches[source.key].end))
        with bound(pinned), table_reader():
            return call_query(query, ctx.spark)

    flow = Flow(
        name=spec.name, target=ident, sources={source.key: source}, transform=transform,
        sink=OverwriteSink(), event_time_column=event_time_column(table),
        catalog=ctx.catalog, config=ctx.graph.spec.configuration, aliases=ctx.aliases,
        min_spacing=_refresh_interval(ctx, spec),
    )
    return flow, found.inputs
