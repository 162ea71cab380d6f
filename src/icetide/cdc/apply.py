"""Apply a CDC source's batches to Iceberg primary-key tables, exactly once.

One CDC flow reads one source position (a MySQL binlog coordinate / snapshot progress)
and applies every followed upstream table to its own target table:

* each batch is already the last change per key in binlog order; ``_op`` r/c/u/d becomes
  ``+I``/``+U``/``-D`` and the rows are MERGEd by :class:`~icetide.lake.sinks.MergeSink`
  with ``deduplicate(sequence_field="_cdc_pos")``: a stored row is only replaced or
  deleted by a version at least as new, which makes resumed snapshots converge;
* schema changes are reconciled on the target before its rows (:mod:`.schema_sync`);
* the flow's *anchor* (its declared target) carries the position; every other table is a
  *side table* committed first with the same marker, so all tables of a source move with
  one position and nothing is applied twice;
* a ``resnapshot`` position (``icetide cdc resnapshot TABLE``) empties every target of
  the flow in one exactly-once batch, which ends at a new snapshot position.

Why and how, with the crash cases: docs/cdc.md ("Several tables, one position", "Purged
binlog and icetide cdc resnapshot TABLE").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from icetide.cdc.evolution import DropPolicy
from icetide.cdc.schema import TableSchema
from icetide.cdc.schema_sync import META_COLUMNS, SEQUENCE_COLUMN, reconcile, renames_of
from icetide.errors import PositionLostError, SchemaChangeError
from icetide.lake.hudi_sink import HudiSink
from icetide.lake.sinks import Changes, MergeSink, Props, WriteResult, resolved
from icetide.model.source import AnyBatch, AnySource, BatchRange, P, Position
from icetide.tables.sql import quote_ident

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from icetide.flows.context import BatchContext

log = logging.getLogger(__name__)

RESNAPSHOT = "resnapshot"


def resnapshot_position(now_ms: int | None = None) -> dict[str, object]:
    """The position that makes a CDC flow delete its targets and snapshot again (unique, so
    two resets never look like the same half-committed batch)."""
    return {"phase": RESNAPSHOT, "requested_at": now_ms or int(time.time() * 1000)}


def is_resnapshot(position: Position) -> bool:
    return isinstance(position, dict) and position.get("phase") == RESNAPSHOT


class TableSource(Protocol[P]):
    """What the apply side needs of a multi-table CDC source (e.g. ``MySqlSource``)."""

    key: str

    def initial_position(self) -> P: ...
    def plan(self, start: P, max_records: int | None = None) -> BatchRange[P] | None: ...
    def plan_to(self, start: P, end: P) -> BatchRange[P]: ...
    def read(self, spark: SparkSession, batch: BatchRange[P]) -> DataFrame: ...
    def read_tables(self, spark: SparkSession, batch: BatchRange[P]) -> dict[str, DataFrame]: ...
    def batch_schemas(self, batch: BatchRange[P]) -> dict[str, TableSchema]: ...
    def schema(self, table: str) -> TableSchema: ...
    def lag(self, position: P) -> dict[str, object]: ...
    def close(self) -> None: ...

    @property
    def tables(self) -> list[str]: ...


class CdcSource(AnySource):
    """A CDC source that also understands the re-snapshot position.

    ``lake_tables`` (the flow's targets, ``db.table``) are named in the remedy when the
    position is lost.
    """

    def __init__(self, inner: TableSource[Any]) -> None:
        self.inner = inner
        self.key = inner.key
        self.lake_tables: list[str] = []

    def initial_position(self) -> Position:
        start: Position = self.inner.initial_position()
        return start

    def plan(self, start: Position, max_records: int | None = None) -> AnyBatch | None:
        if is_resnapshot(start):
            return self.plan_to(start, self.inner.initial_position())
        try:
            return _more(self.inner.plan(start, max_records))
        except PositionLostError as exc:
            raise self._lost(exc) from None

    def plan_to(self, start: Position, end: Position) -> AnyBatch:
        if is_resnapshot(start):
            return BatchRange(start, end, 1, {"phase": RESNAPSHOT, "caught_up": False})
        try:
            planned = _more(self.inner.plan_to(start, end))
        except PositionLostError as exc:
            raise self._lost(exc) from None
        assert planned is not None
        return planned

    def _lost(self, exc: PositionLostError) -> PositionLostError:
        if not self.lake_tables:
            return exc
        commands = "; ".join(f"`icetide cdc resnapshot {t}`" for t in self.lake_tables[:1])
        return PositionLostError(f"{exc} — for this flow (lake tables "
                                 f"{', '.join(self.lake_tables)}) run: {commands}")

    def read(self, spark: SparkSession, batch: AnyBatch) -> DataFrame:
        return self.inner.read(spark, batch)

    def lag(self, position: Position) -> dict[str, object]:
        return {"phase": RESNAPSHOT} if is_resnapshot(position) else self.inner.lag(position)

    def close(self) -> None:
        self.inner.close()


def _more(batch: AnyBatch | None) -> AnyBatch | None:
    """Snapshot batches are never the last: the binlog phase follows (``--once`` goes on).

    A snapshot batch always moves the position, also with no rows (the table ended exactly
    at the previous batch, or is empty: the position goes to the next table or to the
    binlog phase); like a schema-change batch without rows (which may end where it
    starts) it counts as one record so the loop runs it and commits the position — the
    loop skips zero-record batches, and the flow would never reach the binlog.
    """
    if batch is None:
        return None
    if batch.info.get("phase") == "snapshot":
        return BatchRange(batch.start, batch.end, max(batch.records, 1),
                          {**batch.info, "caught_up": False})
    if batch.info.get("schema_changes") and batch.records == 0:
        return BatchRange(batch.start, batch.end, 1, {**batch.info, "caught_up": False})
    return batch


@dataclass(frozen=True)
class CdcTarget:
    """One upstream table and the primary-key table it lands in."""

    source_table: str
    ident: str  # catalog.db.table
    keys: tuple[str, ...]
    sink: MergeSink | HudiSink

    @property
    def changelog(self) -> str | None:
        return self.sink.changelog


#: Creates the target of an upstream table seen for the first time (None: not followed).
TargetFactory = Callable[["SparkSession", TableSchema], "CdcTarget | None"]


def merge_frame(df: DataFrame, target: StructType) -> DataFrame:
    """AnySource rows in the target's column order and types, ``_op`` as ``+I/+U/-D``.

    Target columns the rows lack (kept after an upstream DROP COLUMN) are null.
    """
    from pyspark.sql import functions as F

    df = df.withColumnRenamed("_pos", SEQUENCE_COLUMN)
    have = set(df.columns)
    cols = [(F.col(quote_ident(f.name)) if f.name in have else F.lit(None))
            .cast(f.dataType).alias(f.name) for f in target.fields]
    op = F.col("_op")
    mapped = F.when(op == "d", "-D").when(op == "u", "+U").otherwise("+I")
    return df.select(*cols, mapped.alias("_op"))


def deletes_of(spark: SparkSession, ident: str) -> DataFrame:
    """Every stored row of ``ident`` as a ``-D`` (a re-snapshot empties the targets)."""
    from pyspark.sql import functions as F

    table = spark.table(ident)
    return table.select(*[F.col(quote_ident(c)) for c in table.columns], F.lit("-D").alias("_op"))


def empty_frame(spark: SparkSession, ident: str) -> DataFrame:
    from pyspark.sql.types import StringType, StructField, StructType

    fields = [*spark.table(ident).schema.fields, StructField("_op", StringType(), False)]
    return spark.createDataFrame([], StructType(fields))


def _with_op(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, in ``schema`` plus ``_op``."""
    from pyspark.sql.types import StringType, StructField, StructType

    fields = [*schema.fields, StructField("_op", StringType(), False)]
    return spark.createDataFrame([], StructType(fields))


def _same_columns(sink: HudiSink, schema: TableSchema) -> None:
    """A Hudi target takes no schema change yet: refused before any row is written."""
    now = tuple((c.name, c.spark_type) for c in schema.columns)
    meta = {n for n, _ in META_COLUMNS}
    stored = tuple(c for c in sink.columns if c[0] not in meta)
    if now != stored:
        raise SchemaChangeError(
            f"{schema.qualified} changed its columns to {list(now)}, but its Hudi target "
            f"{sink.table.ident} has {list(stored)}: icetide applies no schema change to a "
            "format='hudi' table yet; the flow stopped at the old position (nothing lost) "
            "- recreate the target or keep the upstream columns")


@dataclass
class CdcApply:
    """The transform and the per-table frames of one CDC flow (see the module docstring)."""

    source: CdcSource
    anchor: str
    targets: dict[str, CdcTarget]  # by upstream table
    create: TargetFactory
    drop_policy: DropPolicy = "keep"
    #: Where messages the source could not decode go (with ``dead_letters`` to read them).
    dead_letter: str | None = None
    dead_letters: Callable[[SparkSession, AnyBatch, str], DataFrame] | None = None
    pending: dict[str, DataFrame] = field(default_factory=dict)

    def sink_of(self, ident: str) -> MergeSink | HudiSink:
        return next(t.sink for t in self.targets.values() if t.ident == ident)

    def transform(self, ctx: BatchContext) -> DataFrame:
        """Frames per target for the batch; returns the anchor's (the loop counts and
        commits it last)."""
        batch = ctx.batches[self.source.key]
        self.pending = {}
        if is_resnapshot(batch.start):
            log.info("flow %s: re-snapshot requested: emptying %s", ctx.flow,
                     sorted(t.ident for t in self.targets.values()))
            self.pending = {t.ident: deletes_of(ctx.spark, t.ident) for t in self.targets.values()}
        else:
            self._prepare(ctx.spark, batch)
            if self.dead_letter is not None and self.dead_letters is not None:
                ctx.emit(self.dead_letter, self.dead_letters(ctx.spark, batch, ctx.flow))
        anchor = self.pending.pop(self.anchor, None)
        if anchor is not None:
            return anchor
        sink = self.sink_of(self.anchor)
        if isinstance(sink, HudiSink):  # no table to read before its first commit
            return _with_op(ctx.spark, sink.schema)
        return empty_frame(ctx.spark, self.anchor)

    def _target(self, spark: SparkSession, table: str) -> CdcTarget | None:
        if table not in self.targets:
            made = self.create(spark, self.source.inner.schema(table))
            if made is None:
                return None
            self.targets[table] = made
        return self.targets[table]

    def _prepare(self, spark: SparkSession, batch: AnyBatch) -> None:
        inner, info = self.source.inner, batch.info
        frames = inner.read_tables(spark, batch)
        schemas = inner.batch_schemas(batch)
        changed = cast("Iterable[str]", info.get("schema_changes", {}))
        touched = {*frames, *changed, *cast("Iterable[str]", info.get("adopted", []))}
        for table in sorted(touched):
            target = self._target(spark, table)
            if target is None:
                continue
            schema = schemas.get(table) or inner.schema(table)
            if isinstance(target.sink, HudiSink):
                _same_columns(target.sink, schema)
                stored = target.sink.schema
            else:
                reconcile(spark, target.ident, target.changelog, schema, target.keys,
                          renames_of(table, info), self.drop_policy)
                stored = spark.table(target.ident).schema
            if table in frames:
                self.pending[target.ident] = merge_frame(frames[table], stored)

    def side_tables(self) -> tuple[str, ...]:
        out: list[str] = []
        for t in self.targets.values():
            out += [t.ident] if t.ident != self.anchor else []
            out += [t.changelog] if t.changelog else []
        return tuple(out)


@dataclass(frozen=True)
class CdcSink:
    """Commits the side tables' frames, then the anchor's (each with the batch's marker)."""

    apply: CdcApply
    #: The anchor's rows are read last, after the side tables' commits: the loop counts
    #: the batch before (its marker goes into every commit).
    reads_first = False

    def side_tables(self) -> tuple[str, ...]:
        return self.apply.side_tables()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        done: dict[str, Changes] = {}
        summary = resolved(props)
        try:
            for ident in sorted(self.apply.pending):
                if ident not in sides_done:
                    done.update(self.apply.sink_of(ident).write(
                        spark, self.apply.pending[ident], ident, summary, sides_done))
            done.update(self.apply.sink_of(target).write(spark, df, target, summary, sides_done))
        finally:
            self.apply.pending = {}
        return done
