from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from icetide.errors import PipelineError
from icetide.pipelines.graph import CycleError, PipelineGraph, find_cycle, topological_sort
from icetide.pipelines.spec import AutoCdcSpec, FlowKind, FlowSpec, PipelineSpec, TableSpec

SPEC = PipelineSpec(name="p", catalog="lake", database="db")


def _noop() -> None: ...


_q: Any = _noop  # a stand-in query function


def table(name: str, **kw: Any) -> TableSpec:
    return TableSpec(name, **kw)


def flow(name: str, target: str | None = None, inputs: Iterable[str] | None = None,
         kind: FlowKind = "append") -> FlowSpec:
    return FlowSpec(name, target or name, query=_q, kind=kind,
                    inputs=tuple(inputs) if inputs is not None else None)


def graph(tables: list[TableSpec], flows: list[FlowSpec]) -> PipelineGraph:
    return PipelineGraph(SPEC, {t.name: t for t in tables}, {f.name: f for f in flows})


# --------------------------------------------------------------------------- pure algorithms
def test_topological_sort_is_deterministic() -> None:
    edges = [("a", "c"), ("b", "c"), ("c", "d")]
    assert topological_sort(["d", "c", "b", "a", "z"], edges) == ("a", "b", "c", "d", "z")


def test_find_cycle_reports_the_path() -> None:
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
    assert find_cycle(["a", "b", "c", "d"], edges) == ("a", "b", "c", "a")
    assert find_cycle(["x"], [("x", "x")]) == ("x", "x")
    assert find_cycle(["a", "b"], [("a", "b")]) is None


def test_topological_sort_raises_cycle_error() -> None:
    with pytest.raises(CycleError, match="dependency cycle: b → c → b") as info:
        topological_sort(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "b")])
    assert info.value.cycle == ("b", "c", "b")
    assert isinstance(info.value, PipelineError)


# --------------------------------------------------------------------------- graph
def _chain() -> PipelineGraph:
    return graph(
        [table("db.raw"), table("db.clean"), table("dws.agg", kind="materialized_view")],
        [flow("db.raw", inputs=["ext.src"]), flow("db.clean", inputs=["raw"]),
         flow("dws.agg", inputs=["db.clean", "db.raw"], kind="batch")],
    )


def test_order_edges_and_externals() -> None:
    g = _chain()
    assert g.topological_order() == ("db.raw", "db.clean", "dws.agg")
    assert g.flow_order() == ("db.raw", "db.clean", "dws.agg")
    assert ("db.raw", "db.clean") in g.edges()
    assert g.external_inputs() == frozenset({"ext.src"})
    assert g.upstream("dws.agg") == {"db.raw", "db.clean", "ext.src"}
    assert g.problems({"ext.src"}) == []
    g.validate(lambda name: name == "ext.src")


def test_lookups() -> None:
    g = _chain()
    assert g.table("raw").name == "db.raw"
    assert g.table("lake.db.raw").name == "db.raw"
    assert [f.name for f in g.flows_into("clean")] == ["db.clean"]
    with pytest.raises(PipelineError, match=r"no dataset 'nope'; it declares: db.clean"):
        g.table("nope")


def test_with_inputs_qualifies_and_replaces() -> None:
    g = graph([table("db.a"), table("db.b")], [flow("db.a"), flow("db.b")])
    assert g.edges() == frozenset()
    g2 = g.with_inputs({"b": ["a", "a", "other.x"]})
    assert g2.flows["db.b"].inputs == ("db.a", "other.x")
    assert g.flows["db.b"].inputs is None  # the original is unchanged
    with pytest.raises(PipelineError, match="no flow 'zzz'"):
        g.with_inputs({"zzz": []})


def test_missing_input_and_missing_target() -> None:
    g = graph([table("db.a")], [flow("db.a", inputs=["db.ghost"]), flow("db.f", "db.nowhere")])
    codes = {(p.code, p.subject) for p in g.problems()}
    assert ("missing_input", "db.a") in codes
    assert ("missing_target", "db.f") in codes
    with pytest.raises(PipelineError, match=r"db.ghost, which is neither a dataset"):
        g.validate()


def test_cycle_is_a_problem_with_its_path() -> None:
    g = graph([table("db.a"), table("db.b")],
              [flow("db.a", inputs=["db.b"]), flow("db.b", inputs=["db.a"])])
    cycles = [p for p in g.problems() if p.code == "cycle"]
    assert len(cycles) == 1 and "db.a → db.b → db.a" in cycles[0].message
    with pytest.raises(CycleError):
        g.topological_order()


def test_flow_into_wrong_kind_of_dataset() -> None:
    g = graph([table("db.mv", kind="materialized_view"), table("db.v", kind="temporary_view")],
              [flow("db.mv", kind="batch"), flow("db.extra", "db.mv"), flow("db.v", kind="view"),
               flow("db.x", "db.v")])
    wrong = sorted(p.subject for p in g.problems() if p.code == "wrong_target_kind")
    assert wrong == ["db.extra", "db.x"]


def test_cdc_keys_must_match_primary_key_and_source_is_an_edge() -> None:
    cdc = AutoCdcSpec(source="db.changes", keys=("id",), sequence_by="seq")
    g = graph([table("db.dim", primary_key=("productId",)), table("db.changes")],
              [FlowSpec("db.dim", "db.dim", kind="auto_cdc", cdc=cdc), flow("db.changes")])
    assert ("db.changes", "db.dim") in g.edges()
    assert [p.code for p in g.problems()] == ["cdc_keys_mismatch"]


def test_streaming_table_without_flow_is_a_warning() -> None:
    g = graph([table("db.lonely")], [])
    (problem,) = g.problems()
    assert (problem.severity, problem.code) == ("warning", "no_flows")
    g.validate()  # warnings do not fail validation
