"""Create a flow's target table from its spec and discovered schema, and choose its sink.

* append tables: format v2, fanout writes, the declared Iceberg partitioning;
* primary-key tables: key columns NOT NULL and identifier fields, merge-on-read,
  ``bucket(N, key)`` unless partitioning is declared (``partition_cols=[]``: none), a merge engine
  (default ``deduplicate``) and, with ``changelog=True``, ``<table>__changelog``;
* ``cluster_by``: the table's sort order, ``WRITE LOCALLY ORDERED BY`` (every data file
  sorted; compaction sorts by it), set when it differs from the table's (a table whose
  ``cluster_by`` is dropped keeps its order: ``ALTER TABLE … WRITE UNORDERED`` drops it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.engine.evolve import apply_evolution, evolve_changelog, plan_evolution, read_stored
from icetide.errors import PipelineError
from icetide.lake.sinks import AppendSink, MergeSink, Sink
from icetide.model.keys import TableProperties
from icetide.pipelines.names import where
from icetide.pipelines.schemas import compare_schemas, parse_ddl
from icetide.pipelines.spec import TableSpec
from icetide.runtime.startup import phase
from icetide.tables.changelog import changelog_ddl, changelog_table_name
from icetide.tables.ddl import (
    APPEND_TABLE_PROPERTIES,
    PRIMARY_KEY_TABLE_PROPERTIES,
    create_table_sql,
    sort_order_text,
    write_order_sql,
)
from icetide.tables.merge_engines import Deduplicate
from icetide.tables.sql import quote_ident, quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

OP_COLUMN = "_op"  # +I/+U/-U/-D; never stored
ORDINAL_COLUMN = "_seq"  # arrival order inside a batch, when the flow provides it
DEFAULT_BUCKETS = 16
_TIME_TRANSFORMS = ("years", "months", "days", "hours")


def event_time_column(table: TableSpec) -> str | None:
    """The column freshness is measured on: declared by property, else the time partition."""
    declared = table.table_properties.get(TableProperties.EVENT_TIME_COLUMN)
    if declared:
        return declared
    for part in table.partition_cols:
        if part.transform in _TIME_TRANSFORMS:
            return part.source_column
    return None


def partition_sql(table: TableSpec) -> list[str]:
    """The table's Iceberg partition fields as DDL: the declared ones; for a primary-key
    table that declares none, ``bucket(DEFAULT_BUCKETS, <first key column>)`` — unless it
    declared ``partition_cols=[]``. Buckets bound what one MERGE reads of a large table;
    a small table pays for them: each commit writes a file (and a delete file) per bucket
    it touches, each MERGE and compaction opens them all."""
    if table.partition_cols or not table.primary_key or table.unpartitioned:
        return [p.to_sql() for p in table.partition_cols]
    return [f"bucket({DEFAULT_BUCKETS}, {quote_ident(table.primary_key[0])})"]


#: Flows are compiled concurrently (engine/run.py): two creating one namespace or table
#: at once would race between Spark's "if not exists" check and the create.
_DDL = threading.Lock()


def ensure_table(spark: SparkSession, ident: str, table: TableSpec,
                 columns: Sequence[tuple[str, str]], *, evolve: bool = False) -> None:
    """``CREATE TABLE IF NOT EXISTS`` for a flow target (plus its changelog), one at a
    time in the process; ``evolve``: an existing table (and changelog) evolves to fit
    ``columns`` and the declared partitioning (:mod:`icetide.engine.evolve`; query flows —
    a CDC target follows its upstream table batch by batch instead, cdc/schema_sync.py)."""
    with _DDL:
        _ensure_table(spark, ident, table, columns, evolve)


def check_declared_schema(table: TableSpec, columns: Sequence[tuple[str, str]]) -> None:
    """A table that declares ``schema=`` takes only a flow whose output matches it (the
    check ``icetide dry-run`` makes, here before the table is created or evolved): a
    PipelineError naming the table and each column that differs."""
    if table.schema is None:
        return
    problems = compare_schemas(parse_ddl(table.schema), dict(columns)).describe()
    if problems:
        raise PipelineError(
            f"{where(table.location)}table {table.name}: its flow's output does not match "
            f"its declared schema: {'; '.join(problems)}; fix the query or the schema=")


def stored_columns(table: TableSpec, columns: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The columns the table stores of a flow's output: a primary-key table consumes
    ``_op`` (the merge engine applies it); an append table stores it like any column."""
    keys = table.primary_key or ()
    return [(n, t) for n, t in columns if not (keys and n == OP_COLUMN)]


def _evolve(spark: SparkSession, ident: str, table: TableSpec,
            columns: Sequence[tuple[str, str]]) -> None:
    """Evolve the existing ``ident`` to fit ``columns`` (or refuse, naming the way out)."""
    plan = plan_evolution(table.name, read_stored(spark, ident), columns,
                          tuple(table.primary_key or ()), partition_sql(table))
    apply_evolution(spark, ident, plan)


def _ensure_table(spark: SparkSession, ident: str, table: TableSpec,
                  columns: Sequence[tuple[str, str]], evolve: bool) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote_qualified(ident.rsplit('.', 1)[0])}")
    phase("catalog_connected")  # the first statement that asks the catalog
    keys = tuple(table.primary_key or ())
    columns = stored_columns(table, columns)
    if evolve and spark.catalog.tableExists(ident):
        _evolve(spark, ident, table, columns)
    stored = [(n, t + " NOT NULL" if n in keys else t) for n, t in columns]
    base = PRIMARY_KEY_TABLE_PROPERTIES if keys else APPEND_TABLE_PROPERTIES
    props = {**base, **table.table_properties}
    event_col = event_time_column(table)
    if event_col:
        props[TableProperties.EVENT_TIME_COLUMN] = event_col
    spark.sql(create_table_sql(ident, stored, partition_sql=partition_sql(table),
                               properties=props, comment=table.comment))
    if keys:
        fields = ", ".join(quote_ident(k) for k in keys)
        spark.sql(f"ALTER TABLE {quote_qualified(ident)} SET IDENTIFIER FIELDS {fields}")
    if keys and table.changelog:
        catalog, name = ident.split(".", 1)
        changelog = f"{catalog}.{changelog_table_name(name)}"
        if evolve and spark.catalog.tableExists(changelog):
            evolve_changelog(spark, changelog, columns, keys)
        spark.sql(changelog_ddl(catalog, name, keys, dict(columns)))
    _ensure_write_order(spark, ident, table, [n for n, _ in stored])


def _ensure_write_order(spark: SparkSession, ident: str, table: TableSpec,
                        stored: Sequence[str]) -> None:
    """Sort the table by its ``cluster_by`` columns (unless it is sorted so already)."""
    if not table.cluster_by:
        return
    names = {n.lower() for n in stored}
    missing = [c for c in table.cluster_by if c.split(".")[0].lower() not in names]
    if missing:
        raise PipelineError(
            f"table {table.name}: cluster_by column {missing[0]!r} is not one of its columns "
            f"({', '.join(stored)}): fix the name in cluster_by or produce the column")
    shown = spark.sql(f"SHOW TBLPROPERTIES {quote_qualified(ident)} ('sort-order')").collect()
    if shown and shown[0][1] == sort_order_text(table.cluster_by):
        return
    spark.sql(write_order_sql(ident, table.cluster_by))


def sink_for(ident: str, table: TableSpec, columns: Sequence[str]) -> Sink:
    """Append for plain tables; a merge engine (default deduplicate) for primary-key tables."""
    if not table.primary_key:
        return AppendSink()
    engine = table.merge_engine or Deduplicate()
    changelog = None
    if table.changelog:
        catalog, name = ident.split(".", 1)
        changelog = f"{catalog}.{changelog_table_name(name)}"
    return MergeSink(engine, tuple(table.primary_key),
                     op_column=OP_COLUMN if OP_COLUMN in columns else None,
                     ordinal_column=ORDINAL_COLUMN if ORDINAL_COLUMN in columns else None,
                     changelog=changelog)
