"""Compile ``create_auto_cdc_flow`` declarations into generic flows (CDC into upsert tables).

A CDC declaration names a pipeline source (``sources:`` in icetide-pipeline.yml) through
a :class:`~icetide.cdc.refs.CdcRef`:

* ``mysql.binlog("shop", table="user_db.products")`` → one flow following one table into
  the declared target, with its own position (and binlog reader);
* ``mysql.binlog("shop", include=[r"user_db\\..*"], into="dim_db")`` → one flow following
  every matching table into ``dim_db.<table>``, created on first sight; the declared
  target is the flow's anchor (it must be one of them) and carries the position, the
  others are side tables with the same marker (:mod:`icetide.cdc.apply`).

Targets are primary-key tables (format v2, or v3 by property; merge-on-read; identifier
fields = the upstream primary key; ``bucket(16, key)``) with the upstream columns in
faithful types plus ``_cdc_pos`` (the source's ``_pos``: the sequence the merge orders
versions by) and ``_ts``
(the upstream commit time, used as the event time for freshness).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from icetide.cdc.apply import CdcApply, CdcSink, CdcSource, CdcTarget, TableSource
from icetide.cdc.refs import CdcRef
from icetide.cdc.schema import TableSchema
from icetide.cdc.schema_sync import META_COLUMNS, SEQUENCE_COLUMN
from icetide.engine.compile.context import CompileContext
from icetide.engine.targets import OP_COLUMN, ensure_table
from icetide.errors import PipelineError, listed
from icetide.flows.loop import Flow
from icetide.lake import hudi
from icetide.lake.dlq import ensure_dlq_table
from icetide.lake.hudi_sink import HudiSink
from icetide.lake.sinks import MergeSink
from icetide.model.keys import TableProperties
from icetide.pipelines.spec import FlowSpec, TableSpec
from icetide.sources.debezium.source import DebeziumSource
from icetide.sources.mysql.declared import MySqlDeclaration
from icetide.tables.changelog import changelog_table_name
from icetide.tables.merge_engines import deduplicate
from icetide.tables.sql import quote_ident, quote_qualified, sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


log = logging.getLogger(__name__)

SEQUENCE_COLUMNS = ("_pos", "_binlog_pos", SEQUENCE_COLUMN)

#: create_auto_cdc_flow options a CDC flow of icetide cannot honour, and why (refused
#: rather than accepted and ignored)
NOT_APPLIED = {
    "apply_as_deletes": "each change of a binlog or Debezium source carries its own "
                        "operation, and deletes are applied as the source reports them",
    "apply_as_truncates": "a truncate is not a change event icetide's CDC sources deliver",
    "column_list": "the target mirrors every column of its source table (schema sync); "
                   "select columns in a downstream flow",
    "except_column_list": "the target mirrors every column of its source table (schema "
                          "sync); drop columns in a downstream flow",
    "ignore_null_updates": "an update event carries the whole row: a NULL in it is the "
                           "value the database holds",
}


def check_cdc_options(spec: FlowSpec) -> None:
    """Refuse the options of ``spec``'s ``create_auto_cdc_flow`` that icetide does not
    apply (:data:`NOT_APPLIED`), naming the option and why."""
    assert spec.cdc is not None
    for option, why in NOT_APPLIED.items():
        value = getattr(spec.cdc, option)
        if value:
            raise PipelineError(f"flow {spec.name!r}: {option}={value!r} is not applied by "
                                f"icetide's CDC flows: {why}; drop {option}=")


def _ref(spec: FlowSpec) -> CdcRef:
    assert spec.cdc is not None
    check_cdc_options(spec)
    if not isinstance(spec.cdc.source, CdcRef):
        raise PipelineError(
            f"flow {spec.name!r}: source {spec.cdc.source!r} is not a CDC source; pass "
            "mysql.binlog('<source name>', table='db.table') (from icetide.sources import mysql)")
    if spec.cdc.sequence_by not in SEQUENCE_COLUMNS:
        raise PipelineError(
            f"flow {spec.name!r}: sequence_by={spec.cdc.sequence_by!r}, but a CDC flow is "
            "ordered by its source position: write sequence_by='_pos'")
    return spec.cdc.source


def _narrowed(ctx: CompileContext, spec: FlowSpec, ref: CdcRef) -> TableSource[Any]:

    base = ctx.sources.get(ref.source)
    if isinstance(base, DebeziumSource):
        return base  # one topic = one table
    if not isinstance(base, MySqlDeclaration):
        kinds = {n: type(s).__name__ for n, s in ctx.sources.items()}
        raise PipelineError(
            f"flow {spec.name!r} reads CDC source {ref.source!r}, but the pipeline's sources "
            f"are {kinds}: declare `{ref.source}: {{type: mysql, host: ..., user: ...}}` "
            "under `sources:` in icetide-pipeline.yml")
    include, exclude = ref.patterns
    return base.follow(ref.table or spec.name, include, exclude)


def _target_name(ctx: CompileContext, spec: FlowSpec, ref: CdcRef, table: str) -> str | None:
    if ref.table is not None:
        return ctx.qualify(spec.target) if table == ref.table else None
    if not ref.include and ref.into is None:  # a one-table source (a Debezium topic)
        return ctx.qualify(spec.target)
    if ref.into is None:
        raise PipelineError(
            f"flow {spec.name!r}: include patterns need into='<database>' naming where the "
            "matched tables land, e.g. mysql.binlog('shop', include=[...], into='dim_db')")
    return ctx.qualify(f"{ref.into}.{table.split('.', 1)[1]}")


def _table_spec(ctx: CompileContext, spec: FlowSpec, ident: str, schema: TableSchema) -> TableSpec:
    anchor = ctx.graph.table(spec.target)
    name = ident.split(".", 1)[1]
    declared = ctx.graph.tables.get(name)
    base = declared or dataclasses.replace(  # the anchor's properties, its own key
        anchor, name=name, primary_key=schema.primary_key, partition_cols=(), cluster_by=(),
        expectations=(), comment=f"CDC of {schema.qualified}")
    keys = tuple(base.primary_key or ())
    if keys != schema.primary_key:
        raise PipelineError(
            f"table {name}: primary_key={list(keys)} but upstream {schema.qualified} has "
            f"PRIMARY KEY {list(schema.primary_key)}: declare primary_key="
            f"{list(schema.primary_key)}")
    return base


def create_target(ctx: CompileContext, spec: FlowSpec, source_key: str, ident: str,
                  schema: TableSchema) -> CdcTarget:
    """Create (if missing) the target of ``schema`` and return how to merge into it."""
    table = _table_spec(ctx, spec, ident, schema)
    columns = [(c.name, c.spark_type) for c in schema.columns] + list(META_COLUMNS)
    if table.format == "hudi":
        return _hudi_target(ctx.spark, ident, table, schema, columns)
    ensure_table(ctx.spark, ident, table, columns)
    _tag(ctx.spark, ident, spec.name, ctx.qualify(spec.target), source_key, schema.qualified)
    catalog, name = ident.split(".", 1)
    changelog = f"{catalog}.{changelog_table_name(name)}" if table.changelog else None
    engine = deduplicate(SEQUENCE_COLUMN, on_delete="remove")
    sink = MergeSink(engine, schema.primary_key, op_column=OP_COLUMN, changelog=changelog)
    return CdcTarget(schema.qualified, ident, schema.primary_key, sink)


def _hudi_target(spark: SparkSession, ident: str, table: TableSpec, schema: TableSchema,
                 columns: list[tuple[str, str]]) -> CdcTarget:
    """A Hudi target (:mod:`icetide.lake.hudi`): created by its first commit."""
    hudi.check_session(spark, ident)
    path = hudi.default_path(spark, ident)
    found = hudi.HudiTable(ident, path, schema.primary_key, SEQUENCE_COLUMN,
                           dict(table.table_properties),
                           hudi.metastore_of(spark, ident.split(".")[0]), tuple(columns))
    hudi.register(found)
    struct = spark.createDataFrame([], ", ".join(f"{quote_ident(n)} {t}" for n, t in columns))
    sink = HudiSink(found, tuple(columns), struct.schema)
    return CdcTarget(schema.qualified, ident, schema.primary_key, sink)


def _tag(spark: SparkSession, ident: str, flow: str, anchor: str, source_key: str,
         upstream: str) -> None:
    props = {TableProperties.CDC_FLOW: flow, TableProperties.CDC_ANCHOR: anchor,
             TableProperties.CDC_SOURCE: source_key, TableProperties.CDC_UPSTREAM: upstream}
    current = spark.sql(f"SHOW TBLPROPERTIES {quote_qualified(ident)}").collect()
    have = {r[0]: r[1] for r in current}
    if all(have.get(k) == v for k, v in props.items()):
        return
    pairs = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in props.items())
    spark.sql(f"ALTER TABLE {quote_qualified(ident)} SET TBLPROPERTIES ({pairs})")


def _anchor_target(spec: FlowSpec, ref: CdcRef, anchor: str, targets: dict[str, CdcTarget],
                   tables: list[str]) -> CdcTarget:
    found = [t for t in targets.values() if t.ident == anchor]
    if len(found) > 1:
        raise PipelineError(
            f"flow {spec.name!r}: tables {listed(t.source_table for t in found)} of source "
            f"{ref.source!r} would all land in {spec.target}: pass table='db.table', or "
            "include=[...] with into='<database>' (one target per table)")
    if not found:
        raise PipelineError(
            f"flow {spec.name!r}: its target {spec.target} is not fed by any table of source "
            f"{ref.source!r} matching {ref.patterns[0]} (found {tables}); check the "
            "table name / include patterns and that the CDC user can SELECT the table")
    assert spec.cdc is not None
    if tuple(spec.cdc.keys) != found[0].keys:
        raise PipelineError(f"flow {spec.name!r}: keys={list(spec.cdc.keys)} must be the "
                            f"upstream primary key ({listed(found[0].keys)}) of "
                            f"{found[0].source_table} feeding {spec.target}")
    return found[0]


def _check_hudi(ctx: CompileContext, spec: FlowSpec, ref: CdcRef, inner: object) -> None:
    """A Hudi target is fed by one MySQL table so far (docs/cdc.md, Hudi targets): side
    tables' half-committed batches are found by Iceberg markers only, and a Debezium
    flow's dead letters are untested beside a Hudi target."""
    if ctx.graph.table(spec.target).format != "hudi":
        return
    if ref.table is None or isinstance(inner, DebeziumSource):
        raise PipelineError(
            f"flow {spec.name!r}: its target {spec.target} is format='hudi', which icetide "
            "feeds from one MySQL table so far: write mysql.binlog('<source>', "
            "table='db.table'), or drop format='hudi'")


def compile_auto_cdc(ctx: CompileContext, spec: FlowSpec) -> Flow:
    """The generic flow of an auto-CDC declaration (creates the targets it can see now)."""
    ref = _ref(spec)
    inner = _narrowed(ctx, spec, ref)
    _check_hudi(ctx, spec, ref, inner)
    source = CdcSource(inner)
    anchor = ctx.qualify(spec.target)

    def create(spark: SparkSession, schema: TableSchema) -> CdcTarget | None:
        ident = _target_name(ctx, spec, ref, schema.qualified)
        return None if ident is None else create_target(ctx, spec, inner.key, ident, schema)

    targets = {t: made for t in inner.tables
               if (made := create(ctx.spark, inner.schema(t))) is not None}
    _anchor_target(spec, ref, anchor, targets, inner.tables)
    source.lake_tables = [anchor.split(".", 1)[1]]
    config = getattr(inner, "config", None)
    apply = CdcApply(source, anchor, targets, create, getattr(config, "drop_policy", "keep"))
    if isinstance(inner, DebeziumSource):  # messages it cannot decode: dead letters
        apply.dead_letter, apply.dead_letters = f"{anchor}_dlq", inner.dead_letters
        ensure_dlq_table(ctx.spark, apply.dead_letter)
    return Flow(name=spec.name, target=anchor, sources={source.key: source},
                side_tables=(apply.dead_letter,) if apply.dead_letter else (),
                transform=apply.transform, sink=CdcSink(apply), event_time_column="_ts",
                max_records=getattr(config, "max_records", None), catalog=ctx.catalog,
                config=ctx.graph.spec.configuration, aliases=ctx.aliases)
