"""The Spark side of the dry run: analyse query flows on empty inputs, writing nothing.

:class:`SparkFlowAnalyzer` is the :data:`~icetide.pipelines.dryrun.FlowAnalyzer` hook. It
runs each query function with every declared source bound to an *empty* batch (no broker
or database round trip) and a ``dp.read``/``dp.read_stream`` hook that records the name
and returns an empty DataFrame of that dataset's schema:

* a table that exists in the catalog: its current schema (``read_stream`` of a
  primary-key table with a changelog adds ``_op, _seq, _commit_ts``, as a run does);
* a dataset of the pipeline not created yet: its declared schema, else the schema its
  producing flow yields (analysed first, recursively and cached) — not an error;
* anything else: the analysis stops and returns the names read so far, so the dry run
  reports the missing input (neither in the pipeline nor in the catalog).

:func:`spark_dry_run` adds what the pure dry run cannot see: how the next run evolves an
already existing target to fit its flow (``change``: a new or widened column, a changed
partitioning — engine/evolve.py), or refuses to (``error``: a dropped or narrowed column,
another primary key).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from icetide.config import Settings
from icetide.engine.evolve import plan_evolution, read_stored
from icetide.engine.hooks import NoChangelog
from icetide.engine.reads import read_source_hook
from icetide.engine.targets import partition_sql, stored_columns
from icetide.errors import PipelineError, SchemaChangeError
from icetide.flows.context import BatchContext, bound
from icetide.model.source import AnyBatch, AnySource, BatchRange
from icetide.pipelines.dryrun import DryRunReport, FlowAnalysis, dry_run
from icetide.pipelines.graph import PipelineGraph, Problem
from icetide.pipelines.lookup import set_lookup_joiner
from icetide.pipelines.names import where
from icetide.pipelines.reader import set_reader, set_source_reader
from icetide.pipelines.schemas import parse_ddl
from icetide.pipelines.spec import FlowSpec, call_query
from icetide.sources.registry import build_sources
from icetide.tables.changelog import CHANGELOG_SUFFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Columns ``dp.read_stream`` adds when it streams a primary-key table's changelog.
CHANGELOG_STREAM_COLUMNS = {"_op": "string", "_seq": "bigint", "_commit_ts": "timestamp"}
_EMPTY: AnyBatch = BatchRange({}, {}, 0)


class _Unresolved(PipelineError):
    """A read of a dataset that neither the pipeline nor the catalog has."""


class _EmptySource(AnySource):
    """A declared source bound to an empty batch: reads nothing, plans nothing."""

    def __init__(self, inner: AnySource) -> None:
        self.inner = inner
        self.key = inner.key

    def initial_position(self) -> dict[str, int]:
        return {}

    def plan(self, start: object, max_records: int | None = None) -> AnyBatch | None:
        return None

    def plan_to(self, start: object, end: object) -> AnyBatch:
        return _EMPTY

    def read(self, spark: SparkSession, batch: AnyBatch) -> DataFrame:
        return self.inner.read(spark, _EMPTY)


def _ddl(schema: Mapping[str, str]) -> str:
    return ", ".join(f"`{name}` {kind}" for name, kind in schema.items())


class SparkFlowAnalyzer:
    """Analyses query flows of ``graph`` on empty inputs (see the module docstring)."""

    def __init__(self, spark: SparkSession, settings: Settings, graph: PipelineGraph) -> None:
        self.spark = spark
        self.graph = graph
        self.catalog = graph.spec.catalog or settings.catalog.name
        self.sources: dict[str, AnySource] = build_sources(graph, settings)
        self._done: dict[str, FlowAnalysis] = {}
        self._running: set[str] = set()

    def exists(self, name: str) -> bool:
        """Whether ``db.table`` exists in the catalog."""
        return bool(self.spark.catalog.tableExists(f"{self.catalog}.{name}"))

    def __call__(self, flow: FlowSpec, graph: PipelineGraph) -> FlowAnalysis:
        if flow.name not in self._done:
            self._done[flow.name] = self._analyse(flow)
        return self._done[flow.name]

    def _analyse(self, flow: FlowSpec) -> FlowAnalysis:
        assert flow.query is not None
        by_key: dict[str, AnySource] = {s.key: _EmptySource(s) for s in self.sources.values()}
        aliases = {name: src.key for name, src in self.sources.items()}
        ctx = BatchContext(self.spark, flow.name, self.catalog, by_key,
                           dict.fromkeys(by_key, _EMPTY), self.graph.spec.configuration, aliases)
        read: list[str] = []
        previous = set_reader(lambda name, streaming: self._read(name, streaming, read))
        previous_sources = set_source_reader(read_source_hook)
        previous_joiner = set_lookup_joiner(None)  # lookups join what self._read gives
        self._running.add(flow.name)
        try:
            with bound(ctx):
                out = call_query(flow.query, self.spark)
        except _Unresolved:
            return FlowAnalysis(tuple(dict.fromkeys(read)), None)
        finally:
            self._running.discard(flow.name)
            set_reader(previous)
            set_source_reader(previous_sources)
            set_lookup_joiner(previous_joiner)
        schema = {f.name: f.dataType.simpleString() for f in out.schema.fields}
        return FlowAnalysis(tuple(dict.fromkeys(read)), schema)

    def _read(self, name: str, streaming: bool, read: list[str]) -> DataFrame:
        qualified = self.graph.qualify(name)
        read.append(qualified)
        declared = self.graph.tables.get(qualified)
        if streaming and declared is not None and declared.primary_key and not declared.changelog:
            raise NoChangelog(f"{self.catalog}.{qualified}")
        if self.exists(qualified):
            df = self.spark.table(f"{self.catalog}.{qualified}").limit(0)
            schema = {f.name: f.dataType.simpleString() for f in df.schema.fields}
            if streaming and self.exists(qualified + CHANGELOG_SUFFIX):
                schema.update(CHANGELOG_STREAM_COLUMNS)
            return self.spark.createDataFrame([], _ddl(schema))
        if qualified in self.graph.tables:
            return self.spark.createDataFrame([], _ddl(self._pipeline_schema(qualified,
                                                                             streaming)))
        raise _Unresolved(f"{qualified} is neither a dataset of the pipeline nor a table")

    def _pipeline_schema(self, table_name: str, streaming: bool) -> dict[str, str]:
        table = self.graph.tables[table_name]
        schema: dict[str, str] | None = dict(parse_ddl(table.schema)) if table.schema else None
        for flow in self.graph.flows_into(table_name):
            if schema is not None or flow.query is None:
                continue
            if flow.name in self._running:  # a cycle: stop here, the graph check names it
                raise _Unresolved(f"{table_name} is produced by {flow.name}, which reads it")
            produced = self(flow, self.graph).schema
            if produced is None:  # its producer reads something missing (reported there)
                raise _Unresolved(f"the schema of {table_name} is unknown")
            schema = dict(produced)
        if schema is None:
            raise PipelineError(
                f"{where(table.location)}cannot tell the schema of {table_name}: no query "
                "flow produces it yet; declare schema='col type, ...' on the table"
            )
        schema = {c: t for c, t in schema.items() if not (table.primary_key and c == "_op")}
        if streaming and table.primary_key and table.changelog:
            schema.update(CHANGELOG_STREAM_COLUMNS)
        return schema

    def close(self) -> None:
        for src in self.sources.values():
            src.close()


def _existing_target_problems(analyzer: SparkFlowAnalyzer, report: DryRunReport
                              ) -> list[Problem]:
    """What the next run changes in already existing targets (``change``), and what it
    would refuse to (``error``: a change no table can follow in place)."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for flow_name, produced in sorted(report.schemas.items()):
        flow = report.graph.flows[flow_name]
        table = report.graph.tables.get(flow.target)
        if table is None or flow.target in seen or not analyzer.exists(flow.target):
            continue
        seen.add(flow.target)
        ident = f"{analyzer.catalog}.{flow.target}"
        try:
            plan = plan_evolution(table.name, read_stored(analyzer.spark, ident),
                                  stored_columns(table, list(produced.items())),
                                  tuple(table.primary_key or ()), partition_sql(table))
        except SchemaChangeError as exc:
            problems.append(Problem("error", "schema_mismatch", flow_name,
                                    f"{where(flow.location)}flow {flow_name}: {exc}"))
            continue
        problems += [Problem("change", "evolve", table.name, f"{where(table.location)}{line}")
                     for line in plan.describe()]
    return problems


def spark_dry_run(spark: SparkSession, settings: Settings, graph: PipelineGraph
                  ) -> DryRunReport:
    """The full dry run of ``graph`` on ``spark``: nothing is created or written."""
    analyzer = SparkFlowAnalyzer(spark, settings, graph)
    try:
        report = dry_run(graph, resolve_inputs=analyzer, existing_tables=analyzer.exists)
        extra = _existing_target_problems(analyzer, report)
    finally:
        analyzer.close()
    if not extra:
        return report
    return DryRunReport(report.graph, report.problems + tuple(extra), report.schemas,
                        report.order)
