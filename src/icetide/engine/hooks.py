"""The run-time hooks behind ``dp.read`` / ``dp.read_stream``, ``dp.lookup_join`` and
source reads.

While flows run, :func:`table_reader` installs :func:`read_table` (a table's current
snapshot, or what is new since the flow's last commit), :func:`lookup_table` and the
source-read hook of :mod:`icetide.engine.reads` into the declarative core
(:mod:`icetide.pipelines.reader`, :mod:`icetide.pipelines.lookup`).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from icetide.engine.reads import read_source_hook
from icetide.errors import PipelineError
from icetide.flows.context import BatchContext, current_batch
from icetide.lake.commit import load_table
from icetide.lake.hudi import HudiTable
from icetide.lake.hudi import find as find_hudi
from icetide.lake.hudi import read as hudi_rows
from icetide.model.source_key import SourceKey
from icetide.pipelines.lookup import LookupJoiner, LookupSpec, set_lookup_joiner
from icetide.pipelines.reader import Reader, SourceReader, set_reader, set_source_reader
from icetide.sources.hudi import HudiTableSource
from icetide.sources.iceberg import IcebergTableSource, flatten_changelog
from icetide.tables.changelog import COMMIT_TS, OP, SEQ, changelog_table_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Tables a compiled flow has seen to exist (bound while its transform runs): tables are
#: not dropped under a running flow, so each is looked up in the catalog once per flow.
KNOWN_TABLES: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "icetide_known_tables", default=None)


def _exists(ctx: BatchContext, ident: str) -> bool:
    known = KNOWN_TABLES.get()
    if known is not None and ident in known:
        return True
    found = bool(ctx.spark.catalog.tableExists(ident))
    if found and known is not None:
        known.add(ident)
    return found


def read_table(name: str, streaming: bool) -> DataFrame:
    """``dp.read``: the table's current snapshot; ``dp.read_stream``: what is new since the
    flow's last commit (appended rows, or the changelog of a primary-key table) — or, in
    a retraction or recomputation pass, what the batch removed or all the table holds
    (:attr:`BatchContext.reading`)."""
    ctx = current_batch()
    ident = ctx.qualify(name)
    hudi = find_hudi(ctx.spark, ident)
    if hudi is not None:
        return _read_hudi(ctx, hudi, streaming)
    if not _exists(ctx, ident):
        raise MissingTable(ident)
    if not streaming:
        return ctx.table(name)
    catalog, rest = ident.split(".", 1)
    changelog = f"{catalog}.{changelog_table_name(rest)}"
    is_pk = _exists(ctx, changelog)
    source = IcebergTableSource(ctx.spark, changelog if is_pk else ident,
                                log_of=ident if is_pk else None)
    if source.key not in ctx.sources:  # discovery: first sight of this input
        if not is_pk and primary_key_of(ctx.spark, ident):  # changes would be refused
            source = IcebergTableSource(ctx.spark, ident, upserts=True)
        start = source.initial_position()
        ctx.add_source(source, source.plan_to(start, start))
    rows = _stream_rows(ctx, source.key, ident, is_pk)
    ctx.streamed[source.key] = rows
    return rows


def lookup_table(left: DataFrame, name: str, spec: LookupSpec) -> DataFrame:
    """``dp.lookup_join``: ``left`` enriched from lake table ``name`` as of now (a Hudi
    table: its rows now, joined as Spark plans it)."""
    ctx = current_batch()
    ident = ctx.qualify(name)
    if find_hudi(ctx.spark, ident) is not None or not _exists(ctx, ident):
        return spec.join(left, read_table(name, False))  # a missing table: MissingTable
    return ctx.lookup_join(left, name, spec)


def _stream_rows(ctx: BatchContext, key: str, ident: str, is_pk: bool) -> DataFrame:
    # a refreshed flow reads a changelog input as the state of the table it logs
    rebuild = is_pk and bool(ctx.batches[key].info.get("refresh"))
    if ctx.reading == "full" or rebuild:
        return _full_rows(ctx, key, ident, is_pk)
    added = ctx.read_source(key)
    if ctx.reading == "removed":  # a changelog's removed rows are retention, no change
        removed = None if is_pk else ctx.read_removed(key)
        added = removed if removed is not None else added.limit(0)
    if not is_pk:
        return added
    return flatten_changelog(added, [f.name for f in ctx.spark.table(ident).schema.fields])


def _read_hudi(ctx: BatchContext, table: HudiTable, streaming: bool) -> DataFrame:
    """``dp.read`` of a Hudi table: its rows now; ``dp.read_stream``: its changes since
    the flow's last commit as a primary-key table's changelog (sources/hudi.py)."""
    if not streaming:
        ctx.looked_up.add(table.ident)
        return hudi_rows(ctx.spark, table)
    source = HudiTableSource(ctx.spark, table)
    if source.key not in ctx.sources:  # discovery: first sight of this input
        start = source.initial_position()
        ctx.add_source(source, source.plan_to(start, start))
    if ctx.reading == "full" or ctx.batches[source.key].info.get("refresh"):
        rows = _full_rows(ctx, source.key, table.ident, True)
    else:
        added = ctx.read_source(source.key)
        rows = added.limit(0) if ctx.reading == "removed" else added  # changes are rows
    ctx.streamed[source.key] = rows
    return rows


def _full_rows(ctx: BatchContext, key: str, ident: str, is_pk: bool) -> DataFrame:
    """Everything the input holds at the batch's end (a changelog: the rows of its table,
    as inserts), kept to the rows ``ctx.full_filter`` names for it."""
    from pyspark.sql import functions as F

    ctx.accessed.add(key)
    rows = ctx.read_full(key)
    kept = ctx.full_filter.get(key)
    if kept is not None:
        rows = rows.join(kept, kept.columns, "left_semi")
    if not is_pk:
        return rows
    columns = ([c for c in rows.columns if c not in (OP, SEQ, COMMIT_TS)]
               if SourceKey.parse(key).kind == SourceKey.HUDI else
               [f.name for f in ctx.spark.table(ident).schema.fields])
    return rows.select(*columns, F.lit("+I").alias(OP), F.lit(0).cast("bigint").alias(SEQ),
                       F.lit(None).cast("timestamp").alias(COMMIT_TS))


def primary_key_of(spark: SparkSession, ident: str) -> list[str]:
    """The identifier fields (primary key) of Iceberg table ``ident``; [] for none."""
    return list(load_table(spark, ident).schema().identifierFieldNames())


class NoChangelog(PipelineError):
    """``dp.read_stream`` of a primary-key table that keeps no changelog."""

    def __init__(self, ident: str) -> None:
        super().__init__(
            f"dp.read_stream({ident.split('.', 1)[1]!r}) reads a primary-key table that keeps "
            "no changelog, so its updates and deletes (MERGE commits) could not be streamed: "
            "declare the table with changelog=True, or read it with dp.read() as a lookup"
        )


class MissingTable(PipelineError):
    """A flow reads a table that does not exist (yet)."""

    def __init__(self, ident: str) -> None:
        super().__init__(
            f"table {ident} does not exist: create it (another flow of the pipeline, "
            "`icetide seed dims`, or a CDC flow) before the flows that read it"
        )
        self.ident = ident


_hook_lock = threading.Lock()
#: the hooks installed before the first block
_previous_hooks: list[tuple[Reader | None, SourceReader | None, LookupJoiner | None]] = []
_hook_users: list[object] = []  # one entry per active table_reader() block


@contextmanager
def table_reader() -> Iterator[None]:
    """Install the ``dp.read`` hook: tables resolve to their current snapshot.

    Flows of a continuous run (and several pipelines in one process) enter this from
    many threads at once; the hook is process-wide, so the first block in installs it
    and only the last one out restores the previous hook.
    """
    token = object()
    with _hook_lock:
        if not _hook_users:
            _previous_hooks.append((set_reader(read_table), set_source_reader(read_source_hook),
                                    set_lookup_joiner(lookup_table)))
        _hook_users.append(token)
    try:
        yield
    finally:
        with _hook_lock:
            _hook_users.remove(token)
            if not _hook_users:
                reader, source_reader, joiner = _previous_hooks.pop()
                set_reader(reader)
                set_source_reader(source_reader)
                set_lookup_joiner(joiner)
