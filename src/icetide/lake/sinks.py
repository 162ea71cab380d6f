"""How a batch's rows land in the target, in exactly one commit carrying the marker.

* :class:`AppendSink` — append-only targets (facts, dead letters).
* :class:`MergeSink` — primary-key tables: the batch is collapsed per key with the table's
  merge engine and MERGEd inside ``CommitMetadata.withCommitProperties`` (one row-level
  commit with the marker); a small copy-on-write table is overwritten whole with the
  MERGE's result instead (:mod:`icetide.lake.rewrite`). With a changelog, the changelog
  rows are computed from the same collapsed rows against the unchanged target and
  appended *before* the MERGE, as a side table carrying the same marker (see
  :mod:`icetide.tables.changelog`).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from icetide.errors import IcetideError
from icetide.lake import commit
from icetide.lake.key_filter import probe_keys
from icetide.lake.observation import observed
from icetide.lake.retract import RETRACT, append_with_retractions
from icetide.lake.retract_positions import only_retracts, retract_by_position
from icetide.lake.rewrite import Rewrite, WholeTable, rewrite, whole_table_rewrite
from icetide.model.keys import MarkerKeys
from icetide.tables.changelog import OP, change_counts_sql, changelog_seq_base, changelog_sql
from icetide.tables.merge_engines import ADD_OPS, MergeEngine
from icetide.tables.merge_fold_sql import DEL
from icetide.tables.merge_sql import (
    GONE,
    REPL,
    MergeSpec,
    collapse_sql,
    compile_merge,
    merge_sql,
)
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)
_views = itertools.count()
#: A batch column saying how a row of a primary-key target is applied: NULL, merged with
#: the engine; ``R``, replaces the stored row (its group was recomputed); ``D``, deletes
#: the key (see :mod:`icetide.engine.changes`).
REPLACE = "__icetide_replace"


@dataclass(frozen=True)
class Changes:
    """What one MERGE did to its table: rows inserted, updated and deleted."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    def __str__(self) -> str:
        return f"+{self.inserted} inserted, ~{self.updated} updated, -{self.deleted} deleted"

    def summary(self) -> dict[str, str]:
        """The snapshot-summary keys that record these counts."""
        return {MarkerKeys.INSERTED: str(self.inserted), MarkerKeys.UPDATED: str(self.updated),
                MarkerKeys.DELETED: str(self.deleted)}

    @classmethod
    def from_summary(cls, summary: Mapping[str, str]) -> Changes | None:
        """The counts a MERGE commit's summary records (``None``: it records none — only
        a MERGE that wrote a changelog counted its changes before committing)."""
        if MarkerKeys.INSERTED not in summary:
            return None
        return cls(*(int(summary.get(k, MarkerKeys.CHANGES_DEFAULT))
                     for k in (MarkerKeys.INSERTED, MarkerKeys.UPDATED, MarkerKeys.DELETED)))

    @classmethod
    def from_figures(cls, figures: Mapping[str, str]) -> Changes:
        """What a MERGE did, from Iceberg's figures of its commit — exact for a commit that
        rewrote no data file and deleted no row (see :meth:`MergeSink._merge`): every
        position delete is then an update, and the rows added are inserts and updates."""
        updated = (int(figures.get("added-position-deletes", "0"))
                   - int(figures.get("removed-position-deletes", "0")))
        return cls(int(figures.get("added-records", "0")) - updated, updated, 0)


#: Per table written: what its MERGE did (append-only tables are absent).
WriteResult = Mapping[str, Changes]


@dataclass(frozen=True)
class DeferredProps:
    """Commit properties (the marker) known only once the sink has read the batch.

    The flow loop observes the batch's row count and newest event time on the sink's own
    first read of it (:mod:`icetide.flows.stats`) instead of a Spark job of its own; the
    sink calls :meth:`build` after that read, before it commits.
    """

    build: Callable[[], Mapping[str, str]]


#: What a sink commits with: the properties, or the means to build them after a first read.
Props = Mapping[str, str] | DeferredProps


def resolved(props: Props) -> Mapping[str, str]:
    """The commit properties themselves."""
    return props.build() if isinstance(props, DeferredProps) else props


class Sink(Protocol):
    """Writes ``df`` to ``target`` in one commit whose summary holds ``props``.

    ``sides_done`` names side tables that already hold this batch (a previous attempt
    committed them, then died): the sink must not write those again. Returns, per
    primary-key table it MERGEd, the rows inserted, updated and deleted.

    ``reads_first``: the sink reads every row of ``df`` in a Spark action before it
    commits, so :class:`DeferredProps` cost no job of their own.
    """

    @property
    def reads_first(self) -> bool:
        """Whether the sink reads all of ``df`` before its commit."""

    def side_tables(self) -> tuple[str, ...]:
        """Side tables the sink itself writes (e.g. a changelog)."""

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        """Commit ``df`` to ``target``."""


class AppendSink:
    """Append-only targets."""

    reads_first = False

    def side_tables(self) -> tuple[str, ...]:
        return ()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        if RETRACT in df.columns:  # an input removed rows: retract and append in one commit
            # only removals (an erase): a DELETE by position; else a MERGE by value
            write = retract_by_position if only_retracts(df) else append_with_retractions
            retracted = write(spark, df, target, resolved(props))
            log.info("%s: %d row(s) retracted", target, retracted)
            return {}
        commit.append(df, target, resolved(props))
        return {}


def _temp_view(prefix: str) -> str:
    return f"__icetide_{prefix}_{next(_views)}"


def last_sequence_number(spark: SparkSession, ident: str) -> int:
    """The table's current snapshot sequence number (0 when it has no snapshot)."""
    snap = commit.load_table(spark, ident).currentSnapshot()
    return 0 if snap is None else int(snap.sequenceNumber())


@dataclass(frozen=True)
class MergeSink:
    """Primary-key tables maintained by a merge engine."""

    engine: MergeEngine
    keys: Sequence[str]
    op_column: str | None = None
    ordinal_column: str | None = None
    changelog: str | None = None  # catalog-qualified changelog table

    def side_tables(self) -> tuple[str, ...]:
        return (self.changelog,) if self.changelog else ()

    reads_first = True

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        table = commit.load_table(spark, target)
        schema = commit.spark_schema(spark, table)
        types = types_of(schema)
        replacing = REPLACE in df.columns
        spec = MergeSpec(target=quote_qualified(target), source="__icetide_batch",
                         keys=self.keys, columns=[f.name for f in schema.fields],
                         op_column=self.op_column, ordinal_column=self.ordinal_column,
                         replacing=replacing)
        views: list[str] = []
        collapse = self._collapse_replacing if replacing else self._collapse
        collapsed = collapse(spark, df, spec, views).persist()
        collapsed_view = _temp_view("collapsed")
        collapsed.createOrReplaceTempView(collapsed_view)
        try:
            # a MERGE that may delete rows counts its changes exactly (see _merge)
            deletes = replacing or compile_merge(self.engine, spec).delete_when is not None
            flag = DEL if DEL in collapsed.columns and not replacing else None
            probe = probe_keys(collapsed, self.keys, types, flag=flag)
            summary = resolved(props)  # after the probe: the loop's figures came with it
            if probe.rows == 0:  # nothing to merge: the position advances alone
                commit.commit_marker_only(spark, target, summary)
                return {target: Changes()}
            merge = _Merge(target, spec, types, collapsed_view, probe.predicate, summary,
                           whole_table_rewrite(table))
            return {target: self._merge(spark, merge, sides_done,
                                        retractions=deletes and (flag is None or
                                                                 probe.flagged > 0))}
        finally:
            collapsed.unpersist()
            for view in (*views, collapsed_view):
                spark.catalog.dropTempView(view)

    def _collapse(self, spark: SparkSession, df: DataFrame, spec: MergeSpec,
                  views: list[str]) -> DataFrame:
        """``df`` collapsed to a row per key with the engine (``views``: temp views made)."""
        batch = _temp_view("batch")
        df.createOrReplaceTempView(batch)
        views.append(batch)
        return spark.sql(collapse_sql(self.engine, replace(spec, source=batch, replacing=False)))

    def _collapse_replacing(self, spark: SparkSession, df: DataFrame, spec: MergeSpec,
                            views: list[str]) -> DataFrame:
        """The usual rows collapsed with the engine, the recomputed rows (``R``)
        collapsed among themselves and flagged to replace the stored row, and the keys
        whose group is gone (``D``) flagged for deletion."""
        from pyspark.sql import functions as F

        kind = F.col(REPLACE)
        usual = self._collapse(spark, df.where(kind.isNull()).drop(REPLACE), spec, views)
        fresh = df.where(kind == "R").drop(REPLACE)
        if spec.op_column:
            fresh = fresh.where(F.col(spec.op_column).isin(*ADD_OPS)).drop(spec.op_column)
        fresh = self._collapse(spark, fresh, replace(spec, op_column=None), views)
        gone = df.where(kind == "D").select(*spec.keys)
        flags = [(False, False), (True, False), (True, True)]
        parts = [frame.withColumn(REPL, F.lit(repl)).withColumn(GONE, F.lit(dead))
                 for frame, (repl, dead) in zip((usual, fresh, gone), flags, strict=True)]
        return (parts[0].unionByName(parts[1], allowMissingColumns=True)
                .unionByName(parts[2], allowMissingColumns=True))

    def _merge(self, spark: SparkSession, merge: _Merge, sides_done: frozenset[str], *,
               retractions: bool) -> Changes:
        """MERGE, with what it changed: the changelog's rows when it is written (counted
        before, into the commit); else, after the commit, Iceberg's own figures of it when
        they tell inserts from updates (no retraction in the batch, no data file rewritten:
        merge-on-read), or a join of the batch with the target as of the MERGE's parent
        snapshot — off the commit's path either way. A small copy-on-write table is
        rewritten whole instead of MERGEd (:mod:`icetide.lake.rewrite`)."""
        changes: Changes | None = None
        if self.changelog and self.changelog not in sides_done:
            changes = self._append_changelog(spark, merge)
        counted = changes.summary() if changes is not None else {}
        if merge.whole is not None:  # small, copy-on-write: written whole, counted on the way
            whole = Changes(*rewrite(spark, Rewrite(
                merge.ident, self.engine, merge.spec, merge.types, merge.collapsed_view,
                {**merge.props, **counted}, merge.whole)))
            return changes if changes is not None else whole
        statement = merge_sql(self.engine, merge.spec, collapsed_view=merge.collapsed_view,
                              key_filter=merge.key_filter, column_types=merge.types)
        commit.with_commit_properties(spark, {**merge.props, **counted},
                                      lambda: _run(spark, statement))
        if changes is not None:
            return changes
        done = commit.committed(spark, merge.ident, merge.props)
        if done is None:
            raise IcetideError(f"MERGE into {merge.ident} committed, but no snapshot of it "
                               "carries the batch's marker: report this as a bug")
        if done.parent is None or not (retractions or _rewrote_files(done.figures)):
            return Changes.from_figures(done.figures)
        return _count_changes(spark, change_counts_sql(
            self.engine, merge.spec, merge.types, collapsed_view=merge.collapsed_view,
            key_filter=merge.key_filter, as_of=done.parent))

    def _append_changelog(self, spark: SparkSession, merge: _Merge) -> Changes:
        """Append the changelog of this MERGE; what it holds is what the MERGE will do.

        The append's own job counts its rows by op (an observation): no job, and no
        cached copy, of their own. Its marker leaves out ``icetide.rows``, unknown until
        the append ran: readers take Iceberg's ``added-records`` (:class:`Marker`)."""
        from pyspark.sql import Observation

        assert self.changelog is not None
        base = changelog_seq_base(last_sequence_number(spark, self.changelog))
        rows = spark.sql(changelog_sql(self.engine, merge.spec, merge.types, seq_base=base,
                                       source_pos=merge.props[MarkerKeys.POS],
                                       collapsed_view=merge.collapsed_view,
                                       key_filter=merge.key_filter))
        seen = Observation()
        props = {k: v for k, v in merge.props.items() if k != MarkerKeys.ROWS}
        commit.append(rows.observe(seen, *_op_counts()), self.changelog, props)
        ops = observed(seen, f"count of the changelog rows appended to {self.changelog}")
        if set(ops) != set(_CHANGE_OPS):  # (see icetide.lake.observation) the target is
            # as the changelog read it until the MERGE: the same rows, counted
            log.info("no observed changelog figures: counting the rows appended")
            ops = dict(rows.select(*_op_counts()).collect()[0].asDict())
        return Changes(*(int(ops[name] or 0) for name in _CHANGE_OPS))


@dataclass(frozen=True)
class _Merge:
    """One MERGE of a collapsed batch: what its statements and commit need."""

    ident: str  # the target, catalog-qualified
    spec: MergeSpec
    types: Mapping[str, str]
    collapsed_view: str
    key_filter: str | None
    props: Mapping[str, str]
    #: the snapshot to rewrite the whole table from, when it is rewritten instead
    whole: WholeTable | None = None


def _rewrote_files(figures: Mapping[str, str]) -> bool:
    """Whether the commit removed data files (copy-on-write rewrote them, unchanged rows
    and all): its figures then do not count the updates."""
    return int(figures.get("deleted-data-files", "0")) > 0


#: The changelog ops a MERGE's :class:`Changes` count, by the names observed.
_CHANGE_OPS = {"inserted": "+I", "updated": "+U", "deleted": "-D"}


def _op_counts() -> list[Column]:
    """Per :data:`_CHANGE_OPS` name: how many changelog rows have that op."""
    from pyspark.sql import functions as F

    return [F.count(F.when(F.col(OP) == op, 1)).alias(name) for name, op in _CHANGE_OPS.items()]


def _count_changes(spark: SparkSession, statement: str) -> Changes:
    row = spark.sql(statement).collect()[0]
    return Changes(int(row["inserted"]), int(row["updated"]), int(row["deleted"]))


def types_of(schema: StructType) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in schema.fields}


def _run(spark: SparkSession, statement: str) -> None:
    spark.sql(statement)


class OverwriteSink:
    """Materialized views: the batch *replaces* the table's contents in one commit.

    DataFrameWriterV2 ``overwrite(lit(True))`` deletes every row and adds the batch's
    files in a single ``overwrite`` snapshot whose summary holds the marker
    (``snapshot-property.*``). When both the table and the result are empty Iceberg
    commits nothing, so an empty marker-only append records the position instead.
    """

    reads_first = False

    def side_tables(self) -> tuple[str, ...]:
        return ()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        from pyspark.sql import functions as F

        summary = resolved(props)
        before = commit.load_table(spark, target).currentSnapshot()
        commit.writer(df, target, summary).overwrite(F.lit(True))
        after = commit.load_table(spark, target).currentSnapshot()
        if after is None or (before is not None
                             and after.snapshotId() == before.snapshotId()):
            log.info("overwrite of %s committed nothing: recording the marker alone", target)
            commit.commit_marker_only(spark, target, summary)
        return {}


_target_locks: dict[str, threading.Lock] = {}
_target_locks_guard = threading.Lock()


def _target_lock(target: str) -> threading.Lock:
    with _target_locks_guard:
        return _target_locks.setdefault(target, threading.Lock())


@dataclass(frozen=True)
class SerializedSink:
    """Several flows of one process writing one target commit one at a time.

    Two flows MERGE-ing into the same primary-key table concurrently (continuous mode:
    one thread per flow) make Iceberg reject the later commit ("Found conflicting
    files"); the loop would retry it, but only after a back-off. Holding a per-target
    lock around the whole write also keeps a changelog computed before the MERGE
    consistent with it. (Writers in *other* processes still rely on Iceberg's checks.)
    """

    inner: Sink

    @classmethod
    def when_shared(cls, inner: Sink, writers: int) -> Sink:
        """``inner`` wrapped when ``writers`` (flows into the target) is more than one."""
        return cls(inner) if writers > 1 else inner

    @property
    def reads_first(self) -> bool:
        return self.inner.reads_first

    def side_tables(self) -> tuple[str, ...]:
        return self.inner.side_tables()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Props, sides_done: frozenset[str]) -> WriteResult:
        with _target_lock(target):
            return self.inner.write(spark, df, target, props, sides_done)
