"""Merge engine specs and their parsing (no JVM)."""

from __future__ import annotations

from typing import Any

import pytest

from icetide.errors import PipelineError
from icetide.tables.merge_engines import (
    Aggregation,
    Deduplicate,
    FirstRow,
    PartialUpdate,
    aggregation,
    deduplicate,
    first_row,
    normalize_function,
    parse_merge_engine,
    partial_update,
)


@pytest.mark.parametrize(
    ("value", "engine"),
    [
        ("deduplicate", Deduplicate()),
        ("Partial_Update", PartialUpdate()),
        ("first-row", FirstRow()),
        ("aggregation", Aggregation()),
        ({"engine": "deduplicate", "sequence_field": "ts"}, Deduplicate("ts")),
        ({"merge-engine": "first_row", "ignore-delete": "true"}, FirstRow()),
        (
            {"merge-engine": "partial-update", "sequence.field": "ts",
             "fields.g.sequence-group": "a, b",
             "partial-update.remove-record-on-delete": True},
            PartialUpdate("ts", {"g": ["a", "b"]}, "remove"),
        ),
        (
            {"merge-engine": "aggregation", "fields.views.aggregate-function": "sum",
             "fields.default-aggregate-function": "last_value"},
            Aggregation({"views": "sum"}, "last_value"),
        ),
        ("aggregation(views=sum)", Aggregation({"views": "sum"})),
        (" aggregation( views = 'sum', uv=max, default=last_value, on_delete=ignore ) ",
         Aggregation({"views": "sum", "uv": "max"}, "last_value", "ignore")),
        ("deduplicate(sequence_field=ts, on_delete=ignore)", Deduplicate("ts", "ignore")),
        ("partial_update()", PartialUpdate()),
        (
            {"engine": "aggregation", "functions": {"uv": "max"}, "on_delete": "ignore"},
            Aggregation({"uv": "max"}, on_delete="ignore"),
        ),
    ],
)
def test_parse_merge_engine(value: Any, engine: Any) -> None:
    assert parse_merge_engine(value) == engine


def test_parse_passes_specs_through_and_factories_match() -> None:
    spec = aggregation(views="sum", uv="max")
    assert parse_merge_engine(spec) is spec
    assert spec == Aggregation({"views": "sum", "uv": "max"})
    assert aggregation({"default": "count"}, default="sum").functions == {"default": "count"}
    assert deduplicate("ts") == Deduplicate("ts")
    assert first_row() == FirstRow()
    assert partial_update(sequence_groups={"g": "a,b"}).sequence_groups == {"g": ("a", "b")}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("upsert", "unknown merge engine 'upsert': use one of deduplicate, partial-update"),
        ({"sequence_field": "ts"}, "names no engine: add 'engine'"),
        ({"engine": "deduplicate", "functions": {}}, "does not take option(s) functions;"),
        ({"engine": "aggregation", "fields.x.nested-key": "a"}, "'fields.x.nested-key' is not"),
        (42, "merge_engine=42 is not a merge engine"),
        ("aggregation(views)", "argument 'views' is not key=value"),
        ("deduplicate(ts=)", "argument 'ts=' is not key=value"),
        ("first_row(x=1)", "'first-row' does not take option(s) x;"),
        ("upsert(a=b)", "unknown merge engine 'upsert'"),
    ],
)
def test_parse_errors_name_the_value(value: Any, message: str) -> None:
    with pytest.raises(PipelineError) as err:
        parse_merge_engine(value)
    assert message in str(err.value)


def test_aggregate_functions_normalised_and_rejected() -> None:
    agg = Aggregation({"a": "LAST_NON_NULL_VALUE", "b": "first_non_null_value"}, "SUM")
    assert dict(agg.functions) == {"a": "last_non_null", "b": "first_non_null"}
    assert agg.default == "sum" and agg.function_of("zzz") == "sum"
    with pytest.raises(PipelineError, match="unknown aggregate function 'median'; use one of"):
        aggregation(v="median")
    with pytest.raises(PipelineError, match="'hll_union' \\(a Paimon function icetide does not"):
        normalize_function("hll_union")


def test_retract_needs_retractable_functions() -> None:
    Aggregation({"v": "sum", "c": "count"}, on_delete="retract")  # default last_non_null: ok
    with pytest.raises(PipelineError, match=r"cannot retract hi: max; only "):
        Aggregation({"hi": "max"}, on_delete="retract")
    with pytest.raises(PipelineError, match=r"\(default\): last_value"):
        Aggregation({}, "last_value", on_delete="retract")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Deduplicate("ts", on_delete="retract"),
         "deduplicate: on_delete='retract' is not supported; use one of 'remove'"),
        (lambda: FirstRow(on_delete="remove"), "first-row: on_delete='remove'"),
        (lambda: Aggregation(on_delete="remove"), "aggregation: on_delete='remove'"),
        (lambda: Deduplicate(""), "sequence_field must be a non-empty column name"),
        (lambda: PartialUpdate(None, {"g": []}), "sequence group 'g' -> [] must list"),
        (lambda: PartialUpdate(None, {"g": ["g"]}), "other than its own sequence field"),
        (lambda: PartialUpdate("ts", {"ts": ["a"]}), "and the row sequence_field"),
        (lambda: PartialUpdate(None, {"g1": ["a"], "g2": ["a"]}),
         "already a sequence field or in group 'g1'"),
        (lambda: PartialUpdate(None, {"g1": ["a"], "g2": ["g1"]}),
         "column 'g1' is in sequence group 'g2'"),
    ],
)
def test_spec_errors(build: Any, message: str) -> None:
    with pytest.raises(PipelineError) as err:
        build()
    assert message in str(err.value)


def test_specs_are_frozen_and_group_lookup() -> None:
    pu = PartialUpdate("ts", {"g": ["a", "b"]})
    assert pu.group_of("b") == "g" and pu.group_of("ts") is None
    with pytest.raises(AttributeError):
        pu.sequence_field = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        pu.sequence_groups["h"] = ("c",)  # type: ignore[index]


def test_an_aggregation_sequence_group_is_a_max_with_its_columns() -> None:
    engine = aggregation(views="sum", sequence_groups={"name_seq": "name, price"})
    assert engine.sequence_groups == {"name_seq": ("name", "price")}
    assert engine.function_of("name_seq") == "max"  # added: the group's newest
    assert engine.group_of("price") == "name_seq" and engine.group_of("views") is None
    paimon = parse_merge_engine({"merge-engine": "aggregation",
                                 "fields.s.sequence-group": "a,b"})
    assert isinstance(paimon, Aggregation) and paimon.group_of("b") == "s"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sequence_groups": {"s": ["a"]}, "on_delete": "retract"}, "cannot be retracted"),
        ({"sequence_groups": {"s": ["a"]}, "s": "sum"}, "must be aggregated with max"),
        ({"sequence_groups": {"s": ["a"]}, "a": "max"}, "given a function"),
        ({"sequence_groups": {"s": ["a"], "t": ["a"]}}, "in another group"),
        ({"sequence_groups": {"s": []}}, "lists no column"),
    ],
)
def test_aggregation_sequence_group_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        aggregation(**kwargs)
