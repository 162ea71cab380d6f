"""Dry run: check a loaded pipeline and write nothing.

The pure part lives here: missing references, cycles, flows into the wrong kind of
dataset, declared-vs-produced schema mismatches, key/partition columns that the data
does not have (a merge engine is parsed when its table is declared).
The JVM part is a hook the runner passes in as ``resolve_inputs``:

    def analyze(flow: FlowSpec, graph: PipelineGraph) -> FlowAnalysis: ...

It runs ``flow.query`` (via :func:`icetide.pipelines.spec.call_query`) against empty
DataFrames, with a reader hook installed (``dp.set_reader``) that records every
``dp.read``/``dp.read_stream`` name and returns an empty DataFrame of that dataset's
schema (analysing upstream flows first, recursively and cached, when the dataset is
produced by the pipeline). It returns the recorded names and the produced schema
(``{column: simpleString type}``). ``dry_run`` calls it once per query flow (append,
batch and view flows; auto CDC flows have no query) and reports any exception it
raises as that flow's problem.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from icetide.errors import PipelineError
from icetide.pipelines.graph import CycleError, PipelineGraph, Problem, TableExists
from icetide.pipelines.names import where
from icetide.pipelines.schemas import compare_schemas, has_column, parse_ddl
from icetide.pipelines.spec import FlowSpec, TableSpec

__all__ = ["DryRunReport", "FlowAnalysis", "FlowAnalyzer", "compare_schemas", "dry_run"]


@dataclass(frozen=True)
class FlowAnalysis:
    """What analysing one query flow found: the datasets it reads and what it produces."""

    inputs: tuple[str, ...] = ()
    schema: Mapping[str, str] | None = None


#: The runner's hook: analyse one flow's query on empty inputs (needs Spark).
FlowAnalyzer = Callable[[FlowSpec, PipelineGraph], FlowAnalysis]


@dataclass(frozen=True)
class DryRunReport:
    """Everything a dry run found; ``graph`` carries the discovered inputs."""

    graph: PipelineGraph
    problems: tuple[Problem, ...] = ()
    schemas: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    order: tuple[str, ...] | None = None

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def changes(self) -> tuple[Problem, ...]:
        """What the next run will change in existing tables (evolution), not problems."""
        return tuple(p for p in self.problems if p.severity == "change")

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def format(self) -> str:
        """A human summary: verdict, order, then one line per problem."""
        verdict = "OK" if self.ok else f"{len(self.errors)} error(s)"
        lines = [f"pipeline {self.graph.spec.name}: {verdict}, {len(self.warnings)} warning(s)"
                 + (f", {len(self.changes)} change(s) at the next run" if self.changes else "")]
        if self.order is not None:
            lines.append("order: " + " → ".join(self.order))
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)

    def raise_if_failed(self) -> None:
        """Raise one PipelineError listing every error."""
        if not self.ok:
            lines = "\n".join(f"  - {p.message}" for p in self.errors)
            raise PipelineError(f"pipeline {self.graph.spec.name} failed its dry run:\n{lines}")


def dry_run(
    graph: PipelineGraph,
    *,
    resolve_inputs: FlowAnalyzer | None = None,
    existing_tables: TableExists | Collection[str] = (),
) -> DryRunReport:
    """Check ``graph`` without writing; ``existing_tables`` are tables outside the pipeline."""
    problems: list[Problem] = []
    analyses = _analyse(graph, resolve_inputs, problems)
    checked = graph.with_inputs({n: a.inputs for n, a in analyses.items()})
    problems += checked.problems(existing_tables)
    schemas = {n: a.schema for n, a in analyses.items() if a.schema is not None}
    for table in sorted(checked.tables.values(), key=lambda t: t.name):
        problems += _table_schema_problems(checked, table, schemas)
    try:
        order: tuple[str, ...] | None = checked.topological_order()
    except CycleError:
        order = None
    return DryRunReport(
        graph=checked,
        problems=tuple(problems),
        schemas=MappingProxyType({n: MappingProxyType(dict(s)) for n, s in schemas.items()}),
        order=order,
    )


def _analyse(
    graph: PipelineGraph, analyzer: FlowAnalyzer | None, problems: list[Problem]
) -> dict[str, FlowAnalysis]:
    query_flows = [f for _, f in sorted(graph.flows.items()) if f.query is not None]
    if analyzer is None:
        unknown = [f.name for f in query_flows if f.inputs is None]
        if unknown:
            problems.append(Problem("warning", "inputs_unknown", graph.spec.name, (
                f"inputs of {len(unknown)} query flow(s) are unknown ({', '.join(unknown)}): "
                "dependencies between them were not checked; run the dry run with Spark"
            )))
        return {}
    analyses: dict[str, FlowAnalysis] = {}
    for flow in query_flows:
        try:
            analyses[flow.name] = analyzer(flow, graph)
        except Exception as exc:  # a broken query is exactly what a dry run reports
            problems.append(Problem("error", "analysis_failed", flow.name, (
                f"{where(flow.location)}flow {flow.name}: its query failed on empty inputs: "
                f"{type(exc).__name__}: {exc}"
            )))
    return analyses


def _table_schema_problems(
    graph: PipelineGraph, table: TableSpec, schemas: Mapping[str, Mapping[str, str]]
) -> list[Problem]:
    at = where(table.location)
    out: list[Problem] = []
    declared: Mapping[str, str] | None = None
    if table.schema is not None:
        try:
            declared = parse_ddl(table.schema)
        except PipelineError as exc:
            return [Problem("error", "bad_schema", table.name, f"{at}table {table.name}: {exc}")]
    flows = graph.flows_into(table.name)
    produced = [(f.name, schemas[f.name]) for f in flows if f.name in schemas]
    reference = declared
    for flow_name, schema in produced:
        if reference is None:
            reference = schema  # no declared schema: the first flow sets it, others must agree
            continue
        against = "its declared schema" if declared is not None else "the other flows"
        for sentence in compare_schemas(reference, schema).describe():
            out.append(Problem("error", "schema_mismatch", flow_name, (
                f"{at}table {table.name}, flow {flow_name} vs {against}: {sentence}"
            )))
    if reference is not None:
        out += _column_problems(table, reference)
    return out


def _column_problems(table: TableSpec, schema: Mapping[str, str]) -> list[Problem]:
    wanted = [("primary_key", c) for c in table.primary_key or ()]
    wanted += [("partition_cols", p.column) for p in table.partition_cols]
    wanted += [("cluster_by", c) for c in table.cluster_by]
    return [
        Problem("error", "missing_column", table.name, (
            f"{where(table.location)}table {table.name}: {arg} column {col!r} is not in its "
            f"schema ({', '.join(schema)}): fix the name or produce the column"
        ))
        for arg, col in wanted
        if not has_column(schema, col)
    ]
