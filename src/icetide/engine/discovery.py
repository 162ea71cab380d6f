"""Discovery: a flow's query run once on an empty batch of every declared source.

It tells which sources the flow reads, which side tables (dead letters) it emits to, the
schema it produces and the lake tables it reads (for ordering flows).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.engine.hooks import table_reader
from icetide.errors import PipelineError
from icetide.flows.context import BatchContext, bound
from icetide.model.source import AnyBatch, AnySource
from icetide.pipelines.spec import FlowSpec, call_query
from icetide.sources.hudi import HudiTableSource
from icetide.sources.iceberg import IcebergTableSource
from icetide.tables.changelog import CHANGELOG_SUFFIX

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

@dataclass(frozen=True)
class Discovery:
    """What running a flow on an empty batch revealed."""

    sources: Mapping[str, AnySource]
    side_tables: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...] = ()  # lake tables read (db.table), for ordering


def _inputs(ctx: BatchContext) -> tuple[str, ...]:
    """Lake tables the flow read, as ``db.table`` (a changelog counts as its table)."""
    tables = set(ctx.looked_up)
    for key in ctx.accessed:
        src = ctx.sources[key]
        if isinstance(src, IcebergTableSource | HudiTableSource):
            tables.update(src.lake_inputs())
    return tuple(sorted({t.split(".", 1)[1].removesuffix(CHANGELOG_SUFFIX) for t in tables}))


class _EmptyBatches(Mapping[str, AnyBatch]):
    """An empty batch per source, planned only when the flow reads that source: a source
    no flow reads (a database for CDC flows that are switched off) is never opened."""

    def __init__(self, sources: Mapping[str, AnySource]) -> None:
        self._sources = sources
        self._planned: dict[str, AnyBatch] = {}

    def __getitem__(self, key: str) -> AnyBatch:
        if key not in self._planned:
            src = self._sources[key]
            start = src.initial_position()
            self._planned[key] = src.plan_to(start, start)
        return self._planned[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)




def discover(spark: SparkSession, spec: FlowSpec, sources: Mapping[str, AnySource], catalog: str,
             configuration: Mapping[str, str], aliases: Mapping[str, str]) -> Discovery:
    """Run ``spec``'s query on an empty batch of every source (creates nothing)."""
    if spec.kind not in ("append", "batch") or spec.query is None:
        raise PipelineError(
            f"flow {spec.name!r} is a {spec.kind} flow without a query function; "
            "only query flows are discovered"
        )
    by_key = {src.key: src for src in sources.values()}
    ctx = BatchContext(spark, spec.name, catalog, by_key, _EmptyBatches(by_key),
                       configuration, aliases)
    try:
        with bound(ctx), table_reader():
            out = call_query(spec.query, spark)
        columns = tuple((f.name, f.dataType.simpleString()) for f in out.schema.fields)
        used = {key: ctx.sources[key] for key in sorted(ctx.accessed)}
        return Discovery(used, tuple(ctx.side_outputs), columns, _inputs(ctx))
    finally:
        ctx.release()
