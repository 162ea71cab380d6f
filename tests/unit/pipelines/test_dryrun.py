from __future__ import annotations

from typing import Any

import pytest

from icetide.errors import PipelineError
from icetide.pipelines import DryRunReport, FlowAnalysis, dry_run
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.spec import AutoCdcSpec, FlowSpec, PipelineSpec, TableSpec

SPEC = PipelineSpec(name="clicks", database="db")


def _noop() -> None: ...


_q: Any = _noop  # a stand-in query function


def _graph(tables: list[TableSpec], flows: list[FlowSpec]) -> PipelineGraph:
    return PipelineGraph(SPEC, {t.name: t for t in tables}, {f.name: f for f in flows})


def _seed() -> PipelineGraph:
    cdc = AutoCdcSpec(source=object(), keys=("productId",), sequence_by="_pos")
    return _graph(
        [TableSpec("db.clicks", schema="uid BIGINT, productId BIGINT",
                   partition_cols=(), primary_key=None),
         TableSpec("db.views", primary_key=("productId",)),
         TableSpec("db.products", primary_key=("productId",))],
        [FlowSpec("db.clicks", "db.clicks", query=_q),
         FlowSpec("db.views", "db.views", query=_q),
         FlowSpec("db.products", "db.products", kind="auto_cdc", cdc=cdc)],
    )


class Analyzer:
    """A stand-in for the runner's Spark analyzer."""

    def __init__(self, results: dict[str, FlowAnalysis | Exception]) -> None:
        self.results = results
        self.seen: list[str] = []

    def __call__(self, flow: FlowSpec, graph: PipelineGraph) -> FlowAnalysis:
        self.seen.append(flow.name)
        result = self.results[flow.name]
        if isinstance(result, Exception):
            raise result
        return result


def test_without_analyzer_only_static_checks_and_a_warning() -> None:
    report = dry_run(_seed())
    assert report.ok
    assert [p.code for p in report.warnings] == ["inputs_unknown"]
    assert report.order is not None and set(report.order) == {"db.clicks", "db.views",
                                                               "db.products"}
    report.raise_if_failed()


def test_with_analyzer_inputs_order_and_schemas() -> None:
    analyzer = Analyzer({
        "db.clicks": FlowAnalysis(("ext.raw",), {"uid": "bigint", "productId": "bigint"}),
        "db.views": FlowAnalysis(("clicks", "products"),
                                 {"productId": "bigint", "views": "bigint"}),
    })
    report = dry_run(_seed(), resolve_inputs=analyzer, existing_tables=["ext.raw"])
    assert analyzer.seen == ["db.clicks", "db.views"]  # the CDC flow has no query
    assert report.problems == ()
    assert report.order == ("db.clicks", "db.products", "db.views")
    assert report.graph.flows["db.views"].inputs == ("db.clicks", "db.products")
    assert dict(report.schemas["db.views"]) == {"productId": "bigint", "views": "bigint"}
    assert "OK" in report.format() and "db.clicks → db.products → db.views" in report.format()


def test_schema_mismatch_missing_input_and_failed_query() -> None:
    analyzer = Analyzer({
        "db.clicks": FlowAnalysis(("ext.raw",), {"uid": "string", "other": "int"}),
        "db.views": RuntimeError("[UNRESOLVED_COLUMN] productId"),
    })
    report = dry_run(_seed(), resolve_inputs=analyzer)
    codes = sorted(p.code for p in report.errors)
    assert codes == ["analysis_failed", "missing_input", "schema_mismatch", "schema_mismatch",
                     "schema_mismatch"]
    text = report.format()
    assert "column uid is declared bigint but the query produces string" in text
    assert "RuntimeError: [UNRESOLVED_COLUMN] productId" in text
    with pytest.raises(PipelineError, match="failed its dry run"):
        report.raise_if_failed()


def test_flows_into_one_table_must_agree_and_keys_must_exist() -> None:
    g = _graph(
        [TableSpec("db.t", primary_key=("id",), partition_cols=())],
        [FlowSpec("db.a", "db.t", query=_q), FlowSpec("db.b", "db.t", query=_q)],
    )
    analyzer = Analyzer({
        "db.a": FlowAnalysis((), {"key": "int"}),
        "db.b": FlowAnalysis((), {"key": "bigint"}),
    })
    report = dry_run(g, resolve_inputs=analyzer)
    messages = [p.message for p in report.errors]
    assert any("flow db.b vs the other flows: column key is declared int" in m for m in messages)
    assert any("primary_key column 'id' is not in its schema (key)" in m for m in messages)


def test_declared_schema_checks_partition_columns_without_analyzer() -> None:
    from icetide.pipelines.partitioning import parse_partition_cols

    g = _graph([TableSpec("db.t", schema="a INT", partition_cols=parse_partition_cols(
        ["days(ts)"]))], [FlowSpec("db.t", "db.t", query=_q)])
    (error,) = dry_run(g).errors
    assert error.code == "missing_column" and "partition_cols column 'ts'" in error.message


def test_bad_declared_schema_and_cycle() -> None:
    g = _graph([TableSpec("db.a", schema="oops"), TableSpec("db.b")],
               [FlowSpec("db.a", "db.a", query=_q, inputs=("db.b",)),
                FlowSpec("db.b", "db.b", query=_q, inputs=("db.a",))])
    report = dry_run(g)
    assert sorted(p.code for p in report.errors) == ["bad_schema", "cycle"]
    assert report.order is None
    assert isinstance(report, DryRunReport)


def test_dry_run_writes_nothing_and_keeps_the_input_graph() -> None:
    g = _seed()
    calls: list[Any] = []

    def analyze(flow: FlowSpec, _graph: PipelineGraph) -> FlowAnalysis:
        calls.append(flow)
        return FlowAnalysis(("db.clicks",))

    dry_run(g, resolve_inputs=analyze)
    assert len(calls) == 2
    assert g.flows["db.views"].inputs is None
