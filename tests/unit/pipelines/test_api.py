from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from icetide import pipelines as dp
from icetide.errors import PipelineError
from icetide.pipelines import Expectation, GraphRegistry, PartitionField, registration_context


def test_importing_the_api_imports_no_pyspark() -> None:
    code = "import sys, icetide.pipelines; assert 'pyspark' not in sys.modules, 'pyspark'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_calling_the_api_outside_a_load_explains_the_fix() -> None:
    with pytest.raises(PipelineError, match=r"dp.create_streaming_table\(...\) was called outside"):
        dp.create_streaming_table("db.t")
    with pytest.raises(PipelineError, match="outside a pipeline load"):

        @dp.table
        def t() -> None: ...


def test_bare_table_decorator(registry: GraphRegistry) -> None:
    @dp.table
    def clicks() -> None: ...

    assert clicks.__name__ == "clicks"  # the function is returned (SDP returns None)
    table = registry.tables["db.clicks"]
    assert table.kind == "streaming_table"
    flow = registry.flows["db.clicks"]
    assert (flow.target, flow.kind) == ("db.clicks", "append")
    query: Any = flow.query
    assert query is clicks
    assert flow.location is not None and flow.location.filename == __file__


def test_table_with_all_arguments(registry: GraphRegistry) -> None:
    @dp.table(
        name="ods.clickevent", comment="Click events", spark_conf={},
        table_properties={"format-version": "2"},
        partition_cols=["days(eventTime)", "bucket(4, uid)"],
        cluster_by=["uid"], schema="uid BIGINT, eventTime TIMESTAMP", format="iceberg",
        primary_key=["uid"], merge_engine="deduplicate", freshness="10 seconds",
        freshness_warn="5s", changelog=True,
        expectations=[Expectation("e", "uid > 0", "fail")],
    )
    def clickevent(spark: Any) -> None: ...

    t = registry.tables["ods.clickevent"]
    assert t.comment == "Click events"
    assert t.partition_cols == (PartitionField("days", "eventTime"),
                                PartitionField("bucket", "uid", 4))
    assert t.cluster_by == ("uid",)
    assert t.schema == "uid BIGINT, eventTime TIMESTAMP"
    assert dict(t.table_properties) == {"format-version": "2"}
    assert (t.primary_key, t.merge_engine, t.changelog) == (("uid",), dp.deduplicate(), True)
    assert (t.freshness, t.freshness_warn) == (10.0, 5.0)
    assert t.expectations == (Expectation("e", "uid > 0", "fail"),)
    assert dict(registry.flows["ods.clickevent"].spark_conf) == {}  # a flow's own: refused


def test_materialized_view_and_temporary_view(registry: GraphRegistry) -> None:
    @dp.materialized_view(name="dws.daily")
    def daily() -> None: ...

    assert registry.tables["dws.daily"].kind == "materialized_view"
    assert registry.flows["dws.daily"].kind == "batch"
    # a temporary view is refused, bare or with keywords, naming what to write instead
    for declare in (lambda f: dp.temporary_view(f), lambda f: dp.temporary_view(name="v")(f)):
        with pytest.raises(PipelineError, match=r"test_api\.py:\d+: temporary_view is not "
                                                r"run by icetide.*a function the flows call"):
            declare(daily)
    assert "db.daily" not in registry.tables and "db.v" not in registry.tables


def test_structtype_schema_becomes_ddl(registry: GraphRegistry) -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    dp.create_streaming_table("db.t", schema=StructType([StructField("id", LongType(), False)]))
    assert registry.tables["db.t"].schema == "`id` bigint NOT NULL"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"format": "delta"}, "icetide tables are Iceberg"),
        ({"partition_cols": ["weeks(ts)"]}, "unknown partition transform"),
        ({"partition_cols": "days(ts)"}, "must be a list"),
        ({"primary_key": "id"}, r"must be a list of column names: write \['id'\]"),
        ({"freshness": "soon"}, "freshness='soon'"),
        ({"merge_engine": "deduplicate"}, "needs a primary key"),
        ({"table_properties": {"a": 1}}, "dict of strings"),
        ({"expectations": [("a", "b")]}, "must be an Expectation"),
        ({"schema": 42}, "DDL string"),
    ],
)
def test_create_streaming_table_errors_name_the_call_site(
    registry: GraphRegistry, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(PipelineError, match=message) as info:
        dp.create_streaming_table("db.t", **kwargs)
    assert str(info.value).startswith(f"{__file__}:")


def test_duplicate_table_names_both_places(registry: GraphRegistry) -> None:
    dp.create_streaming_table("db.t")
    with pytest.raises(PipelineError, match=r"db\.t is declared twice: at .*:\d+ and at .*:\d+"):
        dp.create_streaming_table("t")


def test_append_flow(registry: GraphRegistry) -> None:
    dp.create_streaming_table("dws.views")

    @dp.append_flow(target="dws.views")
    def from_clicks() -> None: ...

    @dp.append_flow(target="dws.views", name="more")
    def old() -> None: ...

    assert registry.flows["dws.from_clicks"].target == "dws.views"
    assert (registry.flows["dws.more"].once, registry.flows["dws.more"].kind) == (False, "append")
    with pytest.raises(PipelineError, match=r"once=True is not applied.*icetide run PIPELINE "
                                            r"--once --flow NAME"):
        dp.append_flow(target="dws.views", name="backfill", once=True)(old)
    assert "dws.backfill" not in registry.flows
    with pytest.raises(PipelineError, match=r"spark_conf=\{'x': 'y'\} is not applied per flow"):
        dp.append_flow(target="dws.views", name="tuned", spark_conf={"x": "y"})(old)


def test_duplicate_flow_names(registry: GraphRegistry) -> None:
    dp.create_streaming_table("db.t")

    def q() -> None: ...

    dp.append_flow(target="db.t", name="f")(q)
    with pytest.raises(PipelineError, match=r"flow db\.f is declared twice"):
        dp.append_flow(target="db.t", name="f")(q)


def test_create_auto_cdc_flow_defaults(registry: GraphRegistry) -> None:
    dp.create_streaming_table("dim.products", primary_key=["productId"])
    dp.create_auto_cdc_flow("dim.products", "products_cdc", ["productId"], "_binlog_pos")
    flow = registry.flows["dim.products"]
    assert flow.kind == "auto_cdc" and flow.query is None and not flow.once
    assert flow.cdc is not None
    assert flow.cdc.source == "db.products_cdc"
    assert (flow.cdc.keys, flow.cdc.sequence_by, flow.cdc.stored_as_scd_type) == (
        ("productId",), "_binlog_pos", 1)
    assert flow.static_inputs == ("db.products_cdc",)


class _FakeColumn:
    """Stands in for a pyspark Column here (no Spark in unit tests): its JVM expression.
    tests/integration/pipelines/test_api_columns.py passes real Columns."""

    def __init__(self, sql: str) -> None:
        self._jc = self
        self.sql = sql

    def toString(self) -> str:
        return self.sql


def test_create_auto_cdc_flow_all_arguments(registry: GraphRegistry) -> None:
    source = object()  # e.g. an icetide MySQL binlog source: kept opaque
    dp.create_auto_cdc_flow(
        target="dim.users", source=source, keys=[_FakeColumn("uid")],
        sequence_by=_FakeColumn("seq"), ignore_null_updates=True,
        apply_as_deletes="op = 'd'", apply_as_truncates=_FakeColumn("op = 't'"),
        except_column_list=["op", "seq"], stored_as_scd_type="1", name="users_cdc",
    )
    flow = registry.flows["dim.users_cdc"]
    assert flow.cdc is not None and flow.cdc.source is source
    assert flow.cdc.keys == ("uid",)
    assert flow.cdc.sequence_by == "seq"
    assert (flow.cdc.apply_as_deletes, flow.cdc.apply_as_truncates) == ("op = 'd'", "op = 't'")
    assert flow.cdc.except_column_list == ("op", "seq") and flow.cdc.column_list is None
    assert flow.cdc.ignore_null_updates and not flow.once
    assert flow.static_inputs == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"stored_as_scd_type": 2}, "SCD type 1"),
        ({"stored_as_scd_type": 3}, "must be 1"),
        ({"track_history_column_list": ["a"]}, "needs SCD type 2"),
        ({"column_list": ["a"], "except_column_list": ["b"]}, "not both"),
        ({"keys": "id"}, "must be a list of columns"),
        ({"sequence_by": 5}, "sequence_by=5"),
        ({"source": None}, "source must be"),
        ({"once": True}, "once=True is not applied"),
    ],
)
def test_create_auto_cdc_flow_errors(
    registry: GraphRegistry, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"target": "t", "source": "s", "keys": ["id"], "sequence_by": "seq"}
    with pytest.raises(PipelineError, match=message):
        dp.create_auto_cdc_flow(**{**args, **kwargs})


# --------------------------------------------------------------------------- expectations
def test_expectations_stack_on_both_sides_in_source_order(registry: GraphRegistry) -> None:
    @dp.expect_or_drop("known_user", "uid IS NOT NULL")
    @dp.expect_all({"a": "x > 0", "b": "y > 0"})
    @dp.table(name="ods.clickevent")
    @dp.expect("valid_product", "productId > 0")
    @dp.expect_or_fail("has_time", "eventTime IS NOT NULL")
    def clickevent() -> None: ...

    got = [(e.name, e.action) for e in registry.tables["ods.clickevent"].expectations]
    assert got == [("known_user", "drop"), ("a", "warn"), ("b", "warn"),
                   ("valid_product", "warn"), ("has_time", "fail")]
    registry.finish()  # nothing pending


def test_expect_all_variants(registry: GraphRegistry) -> None:
    @dp.expect_all_or_drop({"d": "a > 0"})
    @dp.expect_all_or_fail({"f": "b > 0"})
    @dp.materialized_view
    def mv() -> None: ...

    assert [e.action for e in registry.tables["db.mv"].expectations] == ["drop", "fail"]


def test_expectation_on_a_function_that_is_no_table_is_reported(
    registry: GraphRegistry,
) -> None:
    @dp.expect("orphan", "a > 0")
    def helper() -> None: ...

    with pytest.raises(PipelineError,
                       match=r"expectation\(s\) orphan on function 'helper' belong to no"):
        registry.finish()


def test_expectations_on_append_flow_are_rejected(registry: GraphRegistry) -> None:
    dp.create_streaming_table("db.t")
    with pytest.raises(PipelineError, match="expectations belong to tables"):

        @dp.append_flow(target="db.t")
        @dp.expect("e", "a > 0")
        def f() -> None: ...


def test_duplicate_expectation_names_rejected(registry: GraphRegistry) -> None:
    with pytest.raises(PipelineError, match="used twice"):

        @dp.expect("e", "a > 0")
        @dp.table
        @dp.expect("e", "b > 0")
        def t() -> None: ...


def test_bad_expectation_names_the_line(registry: GraphRegistry) -> None:
    with pytest.raises(PipelineError, match=rf"^{__file__}:\d+: expectation 'e'"):
        dp.expect("e", "")
    with pytest.raises(PipelineError, match="takes a dict"):
        dp.expect_all([("a", "b")])  # type: ignore[arg-type,unused-ignore]


def test_query_function_signature_is_checked(registry: GraphRegistry) -> None:
    with pytest.raises(PipelineError, match=r"takes 2 arguments"):

        @dp.table
        def t(a: Any, b: Any) -> None: ...


# --------------------------------------------------------------------------- read hook
def test_read_outside_a_run_and_while_declaring() -> None:
    with pytest.raises(PipelineError, match=r"dp.read\('db.t'\) needs a running pipeline"):
        dp.read("db.t")
    with registration_context(GraphRegistry()), pytest.raises(
        PipelineError, match=r"dp.read_stream\('db.t'\) ran while the pipeline was being declared"
    ):
        dp.read_stream("db.t")


def test_read_delegates_to_the_installed_reader() -> None:
    calls: list[tuple[str, bool]] = []

    def reader(name: str, streaming: bool) -> Any:
        calls.append((name, streaming))
        return f"df:{name}"

    assert dp.set_reader(reader) is None
    read: Any = dp.read
    read_stream: Any = dp.read_stream
    assert read("db.a") == "df:db.a"
    assert read_stream("db.b") == "df:db.b"
    assert calls == [("db.a", False), ("db.b", True)]
    assert dp.set_reader(None) is reader


def test_unknown_attribute_and_merge_engine_forwarding() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dp.nope  # noqa: B018
    try:
        import icetide.tables.merge_engines as engines
    except ImportError:
        with pytest.raises(AttributeError):
            dp.aggregation  # noqa: B018
    else:
        if hasattr(engines, "Aggregation"):
            assert dp.Aggregation is engines.Aggregation


def test_an_empty_partition_cols_declares_a_table_unpartitioned(registry: GraphRegistry) -> None:
    """``partition_cols=[]`` is a declaration (no partitioning at all); leaving it out
    keeps the default (for a primary-key table, its buckets)."""
    dp.create_streaming_table("db.small", primary_key=["id"], partition_cols=[])
    dp.create_streaming_table("db.large", primary_key=["id"])
    dp.create_streaming_table("db.days", partition_cols=["days(ts)"])
    small, large, days = (registry.tables[f"db.{n}"] for n in ("small", "large", "days"))
    assert (small.partition_cols, small.unpartitioned) == ((), True)
    assert (large.partition_cols, large.unpartitioned) == ((), False)
    assert (days.partition_cols, days.unpartitioned) == ((PartitionField("days", "ts"),), False)


def test_a_flow_s_own_spark_conf_is_refused_with_where_to_set_it() -> None:
    registry = GraphRegistry(database="db", catalog="lake")
    with registration_context(registry), pytest.raises(
            PipelineError, match=r"spark_conf=\{'spark.sql.shuffle.partitions': '4'\} is not "
                                 r"applied per flow: .* spark.conf in icetide.yaml"):
        @dp.table(name="db.t", spark_conf={"spark.sql.shuffle.partitions": "4"})
        def t() -> None: ...
