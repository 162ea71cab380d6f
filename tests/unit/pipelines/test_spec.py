from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from icetide.errors import PipelineError
from icetide.pipelines.names import check_column, qualify_name
from icetide.pipelines.partitioning import (
    PartitionField,
    parse_partition_cols,
    parse_partition_field,
)
from icetide.pipelines.spec import (
    AutoCdcSpec,
    Expectation,
    FlowSpec,
    PipelineSpec,
    TableSpec,
    call_query,
    parse_seconds,
    query_arity,
    struct_to_ddl,
)
from icetide.tables.merge_engines import aggregation


# --------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("clicks", "ods.clicks"),
        ("dws.views", "dws.views"),
        ("lake.dws.views", "dws.views"),
    ],
)
def test_qualify_name(name: str, expected: str) -> None:
    assert qualify_name(name, "ods", "lake") == expected


def test_qualify_name_without_database_says_how_to_fix() -> None:
    with pytest.raises(PipelineError, match=r"'clicks' has no database: write 'db.clicks'"):
        qualify_name("clicks", None)


def test_qualify_name_rejects_foreign_catalog_and_bad_parts() -> None:
    with pytest.raises(PipelineError, match=r"other\.db\.t"):
        qualify_name("other.db.t", "ods", "lake")
    with pytest.raises(PipelineError, match="'bad-name'"):
        qualify_name("db.bad-name", "ods")
    with pytest.raises(PipelineError, match="non-empty"):
        qualify_name("", "ods")


def test_check_column_accepts_nested_and_backticked() -> None:
    assert check_column("user.id", "c") == "user.id"
    assert check_column("`odd name`", "c") == "odd name"
    with pytest.raises(PipelineError, match="'1x' is not a column name"):
        check_column("1x", "c")


# --------------------------------------------------------------------------- partitioning
@pytest.mark.parametrize(
    ("text", "field", "sql"),
    [
        ("days(eventTime)", PartitionField("days", "eventTime"), "days(`eventTime`)"),
        ("day(eventTime)", PartitionField("days", "eventTime"), "days(`eventTime`)"),
        ("hours( ts )", PartitionField("hours", "ts"), "hours(`ts`)"),
        ("months(ts)", PartitionField("months", "ts"), "months(`ts`)"),
        ("YEARS(ts)", PartitionField("years", "ts"), "years(`ts`)"),
        ("bucket(16, productId)", PartitionField("bucket", "productId", 16),
         "bucket(16, `productId`)"),
        ("truncate(4,x)", PartitionField("truncate", "x", 4), "truncate(4, `x`)"),
        ("country", PartitionField("identity", "country"), "`country`"),
        ("identity(country)", PartitionField("identity", "country"), "`country`"),
        ("`odd col`", PartitionField("identity", "odd col"), "`odd col`"),
    ],
)
def test_parse_partition_field(text: str, field: PartitionField, sql: str) -> None:
    parsed = parse_partition_field(text)
    assert parsed == field
    assert parsed.to_sql() == sql


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bucket(productId, 16)", r"bucket\(N, column\) with the number first"),
        ("bucket(16)", "bucket"),
        ("truncate(0, x)", "positive integer"),
        ("weeks(ts)", "unknown partition transform"),
        ("days(a, b)", "takes one column"),
        ("", "empty"),
        ("a b", "not a column name"),
    ],
)
def test_parse_partition_field_errors(text: str, message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        parse_partition_field(text)


def test_parse_partition_cols_rejects_string_and_duplicates() -> None:
    assert parse_partition_cols(None) == ()
    with pytest.raises(PipelineError, match=r"must be a list: write \['days\(ts\)'\]"):
        parse_partition_cols("days(ts)")
    with pytest.raises(PipelineError, match="listed twice"):
        parse_partition_cols(["days(ts)", "day(ts)"])


def test_partition_field_validates_direct_construction() -> None:
    with pytest.raises(PipelineError, match="takes no number"):
        PartitionField("days", "ts", 3)
    assert PartitionField("bucket", "user.id", 8).source_column == "user"


# --------------------------------------------------------------------------- expectations
def test_expectation_validation() -> None:
    assert Expectation("ok", "a > 0").action == "warn"
    with pytest.raises(PipelineError, match="non-empty"):
        Expectation(" ", "a > 0")
    with pytest.raises(PipelineError, match="SQL boolean expression"):
        Expectation("x", "")
    with pytest.raises(PipelineError, match="action='explode'"):
        Expectation("x", "a > 0", "explode")  # type: ignore[arg-type,unused-ignore]


# --------------------------------------------------------------------------- tables
def test_table_spec_defaults_and_immutability() -> None:
    t = TableSpec("db.t", table_properties={"k": "v"})
    assert t.database == "db"
    assert t.kind == "streaming_table" and not t.is_view
    with pytest.raises(TypeError):
        t.table_properties["k"] = "w"  # type: ignore[index,unused-ignore]
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.name = "db.u"  # type: ignore[misc,unused-ignore]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "t"}, "must be 'db.table'"),
        ({"kind": "stream"}, "kind='stream'"),
        ({"primary_key": ()}, "distinct columns"),
        ({"primary_key": ("a", "a")}, "distinct columns"),
        ({"merge_engine": "deduplicate"}, "needs a primary key"),
        ({"freshness": 10.0, "freshness_warn": 10.0}, "must be below freshness"),
        ({"freshness": -1.0}, "positive"),
        ({"schema": ""}, "DDL string"),
        ({"kind": "temporary_view", "primary_key": ("a",)}, "only to stored tables"),
        ({"expectations": (Expectation("e", "a"), Expectation("e", "b"))}, "used twice"),
    ],
)
def test_table_spec_errors(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"name": "db.t", **kwargs}
    with pytest.raises(PipelineError, match=message):
        TableSpec(**args)


def test_a_merge_engine_is_parsed_when_its_table_is_declared() -> None:
    declared = {"name": "aggregation(views=sum)", "dict": {"engine": "aggregation",
                                                           "functions": {"views": "sum"}},
                "spec": aggregation(views="sum")}
    for given in declared.values():
        table = TableSpec("db.t", primary_key=("id",), merge_engine=given)
        assert table.merge_engine == aggregation(views="sum")
    assert TableSpec("db.t", primary_key=("id",)).merge_engine is None


@pytest.mark.parametrize(("given", "message"), [
    ("bogus", r"table 'db.t': merge_engine='bogus': unknown merge engine 'bogus': use one of "
              r"deduplicate"),
    ("", r"table 'db.t': merge_engine='': must not be empty: e.g. 'deduplicate'"),
    (42, r"table 'db.t': merge_engine=42: is not a merge engine: use a name such as"),
])
def test_a_bad_merge_engine_fails_its_declaration(given: object, message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        TableSpec("db.t", primary_key=("id",), merge_engine=given)


# --------------------------------------------------------------------------- flows
def test_auto_cdc_spec_validation() -> None:
    spec = AutoCdcSpec(source="db.src", keys=("id",), sequence_by="seq")
    assert spec.source_table == "db.src"
    assert AutoCdcSpec(source=object(), keys=("id",), sequence_by="s").source_table is None
    with pytest.raises(PipelineError, match="at least one column"):
        AutoCdcSpec(source="s", keys=(), sequence_by="seq")
    with pytest.raises(PipelineError, match="not both"):
        AutoCdcSpec(source="s", keys=("id",), sequence_by="seq", column_list=("a",),
                    except_column_list=("b",))
    with pytest.raises(PipelineError, match="SCD type 1"):
        AutoCdcSpec(source="s", keys=("id",), sequence_by="seq", stored_as_scd_type=2)
    with pytest.raises(PipelineError, match="sequence_by"):
        AutoCdcSpec(source="s", keys=("id",), sequence_by=" ")


def test_flow_spec_validation() -> None:
    cdc = AutoCdcSpec(source="db.src", keys=("id",), sequence_by="seq")
    flow = FlowSpec("db.f", "db.t", kind="auto_cdc", cdc=cdc)
    assert flow.static_inputs == ("db.src",)
    query: Any = print  # any callable stands in for a query function
    inputs: Any = ["db.a"]
    assert FlowSpec("db.f", "db.t", query=query, inputs=inputs).inputs == ("db.a",)
    with pytest.raises(PipelineError, match="needs a query function"):
        FlowSpec("db.f", "db.t")
    with pytest.raises(PipelineError, match="cdc spec and no query"):
        FlowSpec("db.f", "db.t", kind="auto_cdc", query=query, cdc=cdc)
    with pytest.raises(PipelineError, match="kind='merge'"):
        FlowSpec("db.f", "db.t", query=query, kind="merge")  # type: ignore[arg-type,unused-ignore]


# --------------------------------------------------------------------------- helpers
def test_parse_seconds() -> None:
    assert parse_seconds("2 minutes", "freshness") == 120.0
    assert parse_seconds("10 seconds", "freshness") == 10.0
    assert parse_seconds(5, "freshness") == 5.0
    assert parse_seconds(None, "freshness") is None
    with pytest.raises(PipelineError, match=r"freshness='soon'.*'2 minutes'"):
        parse_seconds("soon", "freshness")
    with pytest.raises(PipelineError, match="must be positive"):
        parse_seconds("0s", "freshness")
    with pytest.raises(PipelineError, match="invalid duration"):
        parse_seconds(True, "freshness")  # type: ignore[arg-type,unused-ignore]


def test_query_arity_and_call_query() -> None:
    def no_arg() -> str:
        return "none"

    def with_spark(spark: Any) -> Any:
        return spark

    def optional(spark: Any = None, *, x: int = 1) -> str:
        return "optional"

    def two(a: Any, b: Any) -> None: ...

    assert query_arity(no_arg, "table") == 0
    assert query_arity(optional, "table") == 0
    spark: Any = object()
    run: Any = call_query
    assert run(with_spark, spark) is spark
    assert run(no_arg, spark) == "none"
    with pytest.raises(PipelineError, match=r"two\(\) takes 2 arguments"):
        query_arity(two, "table")
    with pytest.raises(PipelineError, match="not a function"):
        query_arity("nope", "table")  # type: ignore[arg-type,unused-ignore]


def test_struct_to_ddl_duck_typed_and_real_structtype() -> None:
    fake = SimpleNamespace(fields=[
        SimpleNamespace(name="uid", dataType=SimpleNamespace(simpleString=lambda: "bigint"),
                        nullable=False),
    ])
    assert struct_to_ddl(fake) == "`uid` bigint NOT NULL"
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    real = StructType([StructField("a", LongType()), StructField("b", StringType(), False)])
    assert struct_to_ddl(real) == "`a` bigint, `b` string NOT NULL"


def test_pipeline_spec_validation() -> None:
    spec = PipelineSpec(name="p", sources={"clicks": {"type": "kafka", "topic": "t"}})
    assert spec.sources["clicks"]["topic"] == "t"
    with pytest.raises(PipelineError, match="name='': must not be blank"):
        PipelineSpec(name="")
    with pytest.raises(PipelineError, match="needs a 'type'"):
        PipelineSpec(name="p", sources={"clicks": {"topic": "t"}})
    with pytest.raises(PipelineError, match="'database'"):
        PipelineSpec(name="p", database="bad-db")
