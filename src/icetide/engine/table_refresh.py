"""``icetide table refresh TABLE [--downstream]``: rebuild a table from what its inputs hold.

Requested while the pipeline is stopped; the next ``icetide run`` rebuilds. The request
empties the table in one commit carrying a reset marker of its first flow (a changelog
logs ``-D`` for every row first) and gives each of its flows a marker whose position on
every input table is ``{"snapshot": null, "refresh": <ms>}``, so its next batch reads
each input in full; a materialized view's position is reset. What to reset is read from
the lake (the flows that committed to the table, the inputs their newest markers name);
``--downstream`` does the same for every table reading this one, transitively, upstream
first. Only tables fed from lake tables can be rebuilt this way (Kafka retains too little,
CDC tables have ``icetide cdc resnapshot``). When and why: docs/semantics.md
("Rebuilding a table").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.engine.hooks import primary_key_of
from icetide.errors import PipelineError, listed
from icetide.lake import commit
from icetide.lake.sinks import MergeSink
from icetide.model.keys import TableProperties
from icetide.model.markers import Marker
from icetide.model.source_key import SourceKey
from icetide.tables.changelog import CHANGELOG_SUFFIX, changelog_table_name
from icetide.tables.merge_engines import Deduplicate
from icetide.tables.sql import quote_ident, quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class RefreshRequest:
    """What one table's refresh request reset."""

    table: str  # catalog-qualified
    flows: tuple[str, ...]  # flows whose position was reset
    rows: int  # rows the table held (emptied now)


def _reset_end(flow: str, table: str, marker: Marker, view: bool, now_ms: int
               ) -> dict[str, Mapping[str, object]]:
    if view:  # a materialized view: no input ids, so it recomputes
        return {key: {} for key in marker.end}
    others = sorted(k for k in marker.end if SourceKey.kind_of(k) != SourceKey.ICEBERG)
    if others:
        raise PipelineError(
            f"{table} cannot be rebuilt from its inputs: flow {flow!r} reads "
            f"{listed(others)}, not lake tables (a topic keeps only what it retains; a CDC "
            "table is copied again with `icetide cdc resnapshot TABLE`)")
    return {key: {"snapshot": None, "refresh": now_ms} for key in marker.end}


def _empty(spark: SparkSession, ident: str, keys: tuple[str, ...], changelog: str | None,
           props: Mapping[str, str]) -> None:
    """Delete every row of ``ident`` in one commit carrying ``props`` (logged as ``-D``
    first when the table keeps a changelog)."""
    if changelog is None or not keys:
        statement = f"DELETE FROM {quote_qualified(ident)}"
        commit.with_commit_properties(spark, props, lambda: _run(spark, statement))
        return
    from pyspark.sql import functions as F

    rows = spark.table(ident).withColumn("_op", F.lit("-D")).withColumn("_ord", F.lit(0))
    sink = MergeSink(Deduplicate(None, "remove"), keys, op_column="_op", ordinal_column="_ord",
                     changelog=changelog)
    sink.write(spark, rows, ident, props, frozenset())


def _run(spark: SparkSession, statement: str) -> None:
    spark.sql(statement)


def newest_markers(spark: SparkSession, ident: str) -> dict[str, Marker]:
    """Per flow that committed to ``ident``, its newest marker."""
    found: dict[str, Marker] = {}
    for _, summary in commit.iter_ancestor_summaries(spark, ident):
        marker = Marker.from_summary(summary)
        if marker is not None:
            found.setdefault(marker.flow, marker)
    return found


def refresh_table(spark: SparkSession, ident: str) -> RefreshRequest:
    """Empty ``ident`` (``catalog.db.table``) and reset its flows to read their inputs in
    full, as the lake records them (the flows that committed to it, their inputs)."""
    if not spark.catalog.tableExists(ident):
        raise PipelineError(f"table {ident} does not exist: name a table of `icetide tables`")
    if commit.read_metadata(spark, ident).properties.get(TableProperties.CDC_FLOW):
        raise PipelineError(f"{ident} is a CDC target: copy it again with `icetide cdc "
                            f"resnapshot {ident.split('.', 1)[1]}`")
    now_ms, resets, views = int(time.time() * 1000), [], 0
    for flow, marker in newest_markers(spark, ident).items():
        view = all(SourceKey.kind_of(k) == SourceKey.REFRESH for k in marker.end)
        views += view
        resets.append(Marker(flow, marker.end, _reset_end(flow, ident, marker, view, now_ms),
                             rows=0, committed_at_ms=now_ms, extra={"refresh": "requested"}))
    held = int(spark.table(ident).count())
    rest = resets
    if resets and views < len(resets):  # a view is overwritten by its refresh anyway
        catalog, name = ident.split(".", 1)
        changelog = f"{catalog}.{changelog_table_name(name)}"
        _empty(spark, ident, tuple(primary_key_of(spark, ident)),
               changelog if spark.catalog.tableExists(changelog) else None,
               resets[0].to_summary())
        rest = resets[1:]
    for reset in rest:
        commit.commit_marker_only(spark, ident, reset.to_summary())
    log.info("%s: emptied (%d rows); flows %s read their inputs in full next run", ident,
             held, listed(r.flow for r in resets))
    return RefreshRequest(ident, tuple(r.flow for r in resets), held)


def _lake_tables(spark: SparkSession, catalog: str) -> list[str]:
    out = []
    for (namespace,) in spark.sql(f"SHOW NAMESPACES IN {quote_ident(catalog)}").collect():
        rows = spark.sql(f"SHOW TABLES IN {quote_qualified(f'{catalog}.{namespace}')}")
        out += [f"{catalog}.{namespace}.{r['tableName']}" for r in rows.collect()]
    return [t for t in out if not t.endswith(CHANGELOG_SUFFIX)]


def downstream_of(spark: SparkSession, ident: str) -> list[str]:
    """The tables whose flows read ``ident`` (or its changelog), transitively, upstream
    first, as their newest markers say."""
    catalog = ident.split(".", 1)[0]
    readers = {t: newest_markers(spark, t).values() for t in _lake_tables(spark, catalog)}
    order, todo = [], [ident]
    while todo:
        source = todo.pop(0)
        inputs = {source, source + CHANGELOG_SUFFIX}
        for table, markers in readers.items():
            if table not in order and table != ident and any(_reads(m, inputs)
                                                            for m in markers):
                order.append(table)
                todo.append(table)
    return order


def _reads(marker: Marker, inputs: set[str]) -> bool:
    for key, position in marker.end.items():
        parsed = SourceKey.read(key)
        if parsed is None:
            continue
        if parsed.kind == SourceKey.ICEBERG and parsed.name in inputs:
            return True
        if (parsed.kind == SourceKey.REFRESH and isinstance(position, Mapping)
                and inputs & set(position)):
            return True
    return False


def request_refresh(spark: SparkSession, ident: str, *, downstream: bool = False
                    ) -> list[RefreshRequest]:
    """Refresh ``ident`` and, with ``downstream``, every table below it (upstream first)."""
    names = [ident, *(downstream_of(spark, ident) if downstream else [])]
    return [refresh_table(spark, name) for name in names]
