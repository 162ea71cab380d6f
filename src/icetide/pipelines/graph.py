"""The dataflow graph of a pipeline: datasets, the flows into them, and their inputs.

Edges run from a flow's inputs to its target. Inputs are known statically for an
auto CDC flow with a dataset source; for query flows the runner discovers them (by
running the query functions on empty DataFrames and recording ``dp.read`` calls) and
fills them in with :meth:`PipelineGraph.with_inputs`. Everything here is pure.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from icetide.errors import PipelineError, listed
from icetide.pipelines.names import qualify_name, where
from icetide.pipelines.spec import FlowKind, FlowSpec, PipelineSpec, TableKind, TableSpec

#: ``change``: what the next run will change in an existing table (dry-run; not a problem).
Severity = Literal["error", "warning", "change"]
#: Answers whether a qualified table name exists outside the pipeline (in the catalog).
TableExists = Callable[[str], bool]
Edge = tuple[str, str]

# Which flow kinds may write into which dataset kinds.
_ALLOWED_FLOWS: dict[TableKind, tuple[FlowKind, ...]] = {
    "streaming_table": ("append", "auto_cdc"),
    "materialized_view": ("batch",),
    "temporary_view": ("view",),
}


@dataclass(frozen=True)
class Problem:
    """One finding of a check: ``code`` is stable for tests/tools, ``message`` says the fix."""

    severity: Severity
    code: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


class CycleError(PipelineError):
    """The graph has a dependency cycle; ``cycle`` is the path, first node repeated last."""

    def __init__(self, cycle: tuple[str, ...]) -> None:
        self.cycle = cycle
        super().__init__(
            f"dependency cycle: {' → '.join(cycle)}; a dataset cannot (indirectly) read "
            "itself: break the cycle by reading an upstream table instead"
        )


# --------------------------------------------------------------------------- pure graph algorithms
def _adjacency(nodes: Iterable[str], edges: Iterable[Edge]) -> dict[str, list[str]]:
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set())
    return {n: sorted(succ) for n, succ in adj.items()}


def find_cycle(nodes: Iterable[str], edges: Iterable[Edge]) -> tuple[str, ...] | None:
    """A cycle as a path ``(a, b, ..., a)``, or None; deterministic (sorted) search."""
    adj = _adjacency(nodes, edges)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> tuple[str, ...] | None:
        state[node] = 1
        path.append(node)
        for nxt in adj[node]:
            if state.get(nxt) == 1:
                return (*path[path.index(nxt):], nxt)
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(adj):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def topological_sort(nodes: Iterable[str], edges: Iterable[Edge]) -> tuple[str, ...]:
    """Upstream before downstream, ties broken by name; :class:`CycleError` on a cycle."""
    edge_list = list(edges)
    adj = _adjacency(nodes, edge_list)
    indegree = dict.fromkeys(adj, 0)
    for succ in adj.values():
        for n in succ:
            indegree[n] += 1
    ready = [n for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for nxt in adj[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(ready, nxt)
    if len(order) < len(adj):
        cycle = find_cycle(adj, edge_list)
        raise CycleError(cycle or tuple(n for n in adj if n not in order))
    return tuple(order)


def _exists_fn(table_exists: TableExists | Collection[str]) -> TableExists:
    if callable(table_exists):
        return table_exists
    known = frozenset(table_exists)
    return known.__contains__


# --------------------------------------------------------------------------- the graph
@dataclass(frozen=True)
class PipelineGraph:
    """A loaded pipeline: its spec, datasets by qualified name, flows by qualified name."""

    spec: PipelineSpec
    tables: Mapping[str, TableSpec] = field(default_factory=dict)
    flows: Mapping[str, FlowSpec] = field(default_factory=dict)
    #: The pipeline's Python modules (``sys.modules`` names): the engine ships their
    #: functions to executors by value, since executors cannot import them.
    modules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", MappingProxyType(dict(self.tables)))
        object.__setattr__(self, "flows", MappingProxyType(dict(self.flows)))

    # -- lookups -------------------------------------------------------------------------
    def qualify(self, name: str) -> str:
        """A referenced name in this pipeline's ``db.table`` form."""
        return qualify_name(name, self.spec.database, self.spec.catalog)

    def table(self, name: str) -> TableSpec:
        """The dataset ``name`` (qualified or not); a PipelineError listing the known ones."""
        spec = self.tables.get(self.qualify(name))
        if spec is None:
            raise PipelineError(
                f"pipeline {self.spec.name} has no dataset {name!r}; it declares: "
                f"{', '.join(sorted(self.tables)) or '(nothing)'}"
            )
        return spec

    def flows_into(self, target: str) -> tuple[FlowSpec, ...]:
        """The flows writing into dataset ``target``, by name."""
        qualified = self.qualify(target)
        return tuple(f for _, f in sorted(self.flows.items()) if f.target == qualified)

    def inputs_of(self, flow: FlowSpec) -> tuple[str, ...]:
        """Known inputs of ``flow`` (qualified): discovered ones plus static ones (CDC source)."""
        found = tuple(flow.inputs or ()) + flow.static_inputs
        return tuple(dict.fromkeys(self.qualify(n) for n in found))

    def with_inputs(self, inputs: Mapping[str, Iterable[str]]) -> PipelineGraph:
        """A copy whose flows carry the discovered ``inputs`` (flow name → dataset names)."""
        flows = dict(self.flows)
        for flow_name, names in inputs.items():
            flow = flows.get(flow_name) or flows.get(self.qualify(flow_name))
            if flow is None:
                raise PipelineError(f"with_inputs: pipeline has no flow {flow_name!r}")
            qualified = tuple(dict.fromkeys(self.qualify(n) for n in names))
            flows[flow.name] = dataclasses.replace(flow, inputs=qualified)
        return dataclasses.replace(self, flows=flows)

    # -- structure -----------------------------------------------------------------------
    def edges(self) -> frozenset[Edge]:
        """``(input, target)`` for every known input of every flow."""
        return frozenset((i, f.target) for f in self.flows.values() for i in self.inputs_of(f))

    def external_inputs(self) -> frozenset[str]:
        """Inputs that are not datasets of this pipeline (tables of other pipelines)."""
        return frozenset(a for a, _ in self.edges() if a not in self.tables)

    def topological_order(self) -> tuple[str, ...]:
        """The pipeline's datasets, upstream first; :class:`CycleError` names a cycle."""
        internal = [(a, b) for a, b in self.edges() if a in self.tables and b in self.tables]
        return topological_sort(self.tables, internal)

    def flow_order(self) -> tuple[str, ...]:
        """Flow names in an order that runs every flow after the flows its inputs depend on."""
        rank = {name: i for i, name in enumerate(self.topological_order())}
        flows = sorted(self.flows.values(), key=lambda f: (rank.get(f.target, -1), f.name))
        return tuple(f.name for f in flows)

    def upstream(self, name: str) -> frozenset[str]:
        """Every dataset or external table ``name`` depends on, transitively."""
        parents: dict[str, set[str]] = {}
        for a, b in self.edges():
            parents.setdefault(b, set()).add(a)
        seen: set[str] = set()
        todo = [self.qualify(name)]
        while todo:
            for p in parents.get(todo.pop(), ()):
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return frozenset(seen)

    # -- checks --------------------------------------------------------------------------
    def problems(self, table_exists: TableExists | Collection[str] = ()) -> list[Problem]:
        """Missing targets/inputs, wrong flow kinds, key mismatches, cycles, empty tables."""
        exists = _exists_fn(table_exists)
        found: list[Problem] = []
        for flow in sorted(self.flows.values(), key=lambda f: f.name):
            found.extend(_flow_problems(self, flow, exists))
        for t in sorted(self.tables.values(), key=lambda t: t.name):
            if t.kind == "streaming_table" and not self.flows_into(t.name):
                found.append(Problem("warning", "no_flows", t.name, (
                    f"{where(t.location)}streaming table {t.name} has no flow: add "
                    f"@dp.append_flow(target={t.name!r}) or dp.create_auto_cdc_flow(...)"
                )))
        try:
            self.topological_order()
        except CycleError as exc:
            found.append(Problem("error", "cycle", exc.cycle[0], str(exc)))
        return found

    def validate(self, table_exists: TableExists | Collection[str] = ()) -> None:
        """Raise one PipelineError listing every error-severity problem."""
        errors = [p for p in self.problems(table_exists) if p.severity == "error"]
        if errors:
            lines = "\n".join(f"  - {p.message}" for p in errors)
            raise PipelineError(f"pipeline {self.spec.name} is not valid:\n{lines}")


def _flow_problems(graph: PipelineGraph, flow: FlowSpec, exists: TableExists) -> list[Problem]:
    at = where(flow.location)
    target = graph.tables.get(flow.target)
    out: list[Problem] = []
    if target is None:
        out.append(Problem("error", "missing_target", flow.name, (
            f"{at}flow {flow.name} targets {flow.target}, which no dataset declares: add "
            f"dp.create_streaming_table({flow.target!r}) or fix the target"
        )))
    elif flow.kind not in _ALLOWED_FLOWS[target.kind]:
        out.append(Problem("error", "wrong_target_kind", flow.name, (
            f"{at}flow {flow.name} ({flow.kind}) cannot write into {target.kind} {target.name}: "
            "append and auto CDC flows need a streaming table (dp.create_streaming_table)"
        )))
    elif flow.cdc is not None and target.primary_key is not None and (
        set(flow.cdc.keys) != set(target.primary_key)
    ):
        out.append(Problem("error", "cdc_keys_mismatch", flow.name, (
            f"{at}auto CDC flow {flow.name} keys {listed(flow.cdc.keys)} differ from "
            f"{target.name}'s primary_key {listed(target.primary_key)}: make them the same"
        )))
    for name in graph.inputs_of(flow):
        if name not in graph.tables and not exists(name):
            out.append(Problem("error", "missing_input", flow.name, (
                f"{at}flow {flow.name} reads {name}, which is neither a dataset of pipeline "
                f"{graph.spec.name} nor an existing table: declare it or create it first"
            )))
    return out
