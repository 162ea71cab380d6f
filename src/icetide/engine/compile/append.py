"""Compile an append flow (``@dp.table`` / ``@dp.append_flow``) into a generic flow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icetide.engine.changes import Query, with_recomputed, with_retractions
from icetide.engine.compile.context import CompileContext
from icetide.engine.hooks import KNOWN_TABLES, table_reader
from icetide.engine.quality import checker_for
from icetide.engine.targets import event_time_column, sink_for
from icetide.errors import PipelineError
from icetide.flows.context import BatchContext
from icetide.flows.loop import Flow
from icetide.lake.sinks import SerializedSink
from icetide.pipelines.spec import FlowSpec, TableSpec, call_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def changes_of(batch: BatchContext, out: DataFrame, run: Query, ident: str,
               table: TableSpec, writers: int) -> DataFrame:
    """``out`` as it is when no input removed rows in the batch; else with what the
    target must retract or recompute (:mod:`icetide.engine.changes`)."""
    if not batch.removes():
        return out
    if not table.primary_key:
        return with_retractions(batch, out, run, ident)
    if writers > 1:
        raise PipelineError(
            f"{ident}: an input of flow {batch.flow!r} removed rows, and the table has "
            f"{writers} flows: recomputing its rows from this flow's inputs would drop the "
            "others' columns. Feed it from changelogs (dp.read_stream of a primary-key "
            "table with changelog=True, handling _op), or rebuild it: `icetide table "
            f"refresh {table.name}`")
    return with_recomputed(batch, out, run, ident, table.primary_key, table.merge_engine)


def compile_append(ctx: CompileContext, spec: FlowSpec) -> tuple[Flow, tuple[str, ...]]:
    """Discover, create the target and side tables, and build the flow; also the lake
    tables the flow reads (``db.table``, for ordering)."""
    found = ctx.discover(spec)
    table = ctx.graph.table(spec.target)
    ident = ctx.ensure_target(table, found)
    query = spec.query
    assert query is not None
    known: set[str] = set()

    writers = sum(f.target == spec.target for f in ctx.graph.flows.values())

    def run(batch: BatchContext) -> DataFrame:
        return call_query(query, batch.spark)

    def transform(batch: BatchContext) -> DataFrame:
        token = KNOWN_TABLES.set(known)
        try:
            with table_reader():
                out = run(batch)
                return changes_of(batch, out, run, ident, table, writers)
        finally:
            KNOWN_TABLES.reset(token)

    return Flow(
        name=spec.name, target=ident, sources=dict(found.sources), transform=transform,
        sink=SerializedSink.when_shared(  # flows into one table commit in turn
            sink_for(ident, table, [c for c, _ in found.columns]), writers),
        side_tables=found.side_tables,
        event_time_column=event_time_column(table),
        checker=checker_for(table.name, table.expectations),
        max_records=ctx.max_records, catalog=ctx.catalog,
        config=ctx.graph.spec.configuration, aliases=dict(ctx.aliases),
    ), found.inputs
