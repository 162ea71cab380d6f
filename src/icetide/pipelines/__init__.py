"""icetide's declarative pipelines: ``from icetide import pipelines as dp``.

The API mirrors Spark Declarative Pipelines (``pyspark.pipelines``)::

    from icetide import pipelines as dp

    @dp.expect_or_drop("known_user", "uid IS NOT NULL")
    @dp.table(name="ods_behavior.clickevent", partition_cols=["days(eventTime)"],
              freshness="10 seconds")
    def clickevent(spark):
        ...

    dp.create_streaming_table("dws.product_views", primary_key=["productId"],
                              merge_engine="aggregation(views=sum)", changelog=True)

Importing this package never imports pyspark or starts a JVM.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from icetide.pipelines.api import (
    append_flow,
    configuration,
    create_auto_cdc_flow,
    create_streaming_table,
    materialized_view,
    table,
    temporary_view,
)
from icetide.pipelines.dryrun import DryRunReport, FlowAnalysis, FlowAnalyzer, dry_run
from icetide.pipelines.expectations import (
    expect,
    expect_all,
    expect_all_or_drop,
    expect_all_or_fail,
    expect_or_drop,
    expect_or_fail,
)
from icetide.pipelines.freshness import RefreshPlan, RefreshPlanner, freshness_status, plan_refresh
from icetide.pipelines.graph import CycleError, PipelineGraph, Problem
from icetide.pipelines.loader import load_pipeline
from icetide.pipelines.lookup import LookupSpec, lookup_join, set_lookup_joiner
from icetide.pipelines.partitioning import PartitionField, parse_partition_field
from icetide.pipelines.reader import Reader, read, read_stream, set_reader
from icetide.pipelines.registry import GraphRegistry, registration_context
from icetide.pipelines.schemas import SchemaDiff, compare_schemas, parse_ddl
from icetide.pipelines.spec import (
    AutoCdcSpec,
    Expectation,
    FlowSpec,
    PipelineDefaults,
    PipelineSpec,
    TableSpec,
    call_query,
)
from icetide.pipelines.specfile import read_spec_file

__all__ = [
    "AutoCdcSpec",
    "CycleError",
    "DryRunReport",
    "Expectation",
    "FlowAnalysis",
    "FlowAnalyzer",
    "FlowSpec",
    "GraphRegistry",
    "LookupSpec",
    "PartitionField",
    "PipelineDefaults",
    "PipelineGraph",
    "PipelineSpec",
    "Problem",
    "Reader",
    "RefreshPlan",
    "RefreshPlanner",
    "SchemaDiff",
    "TableSpec",
    "append_flow",
    "call_query",
    "compare_schemas",
    "configuration",
    "create_auto_cdc_flow",
    "create_streaming_table",
    "dry_run",
    "expect",
    "expect_all",
    "expect_all_or_drop",
    "expect_all_or_fail",
    "expect_or_drop",
    "expect_or_fail",
    "freshness_status",
    "load_pipeline",
    "lookup_join",
    "materialized_view",
    "parse_ddl",
    "parse_partition_field",
    "plan_refresh",
    "read",
    "read_spec_file",
    "read_stream",
    "registration_context",
    "set_lookup_joiner",
    "set_reader",
    "table",
    "temporary_view",
]

# Merge-engine helpers live in icetide.tables.merge_engines; offer them as dp.<name>
# (e.g. dp.aggregation(...)) without importing that module before it is needed.
_MERGE_ENGINE_NAMES = frozenset({
    "Deduplicate", "PartialUpdate", "Aggregation", "FirstRow",
    "deduplicate", "partial_update", "aggregation", "first_row", "parse_merge_engine",
})


def __getattr__(name: str) -> Any:
    if name in _MERGE_ENGINE_NAMES:
        try:
            return getattr(import_module("icetide.tables.merge_engines"), name)
        except (ImportError, AttributeError):
            pass
    raise AttributeError(f"module 'icetide.pipelines' has no attribute {name!r}")
