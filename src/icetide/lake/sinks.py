"""How a batch's rows land in the target, in exactly one commit carrying the marker.

* :class:`AppendSink` — append-only targets (facts, dead letters).
* :class:`MergeSink` — primary-key tables: the batch is collapsed per key with the table's
  merge engine and MERGEd inside ``CommitMetadata.withCommitProperties`` (one row-level
  commit with the marker). With a changelog, the changelog rows are computed from the
  same collapsed rows against the unchanged target and appended *before* the MERGE, as
  a side table carrying the same marker (see :mod:`icetide.tables.changelog`).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from icetide.lake import commit
from icetide.lake.key_filter import probe_keys
from icetide.model.markers import POS, ROWS, Marker
from icetide.tables.changelog import OP, change_counts_sql, changelog_seq_base, changelog_sql
from icetide.tables.merge_engines import MergeEngine
from icetide.tables.merge_sql import MergeSpec, collapse_sql, merge_sql
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)
_views = itertools.count()


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
        return {INSERTED: str(self.inserted), UPDATED: str(self.updated),
                DELETED: str(self.deleted)}


#: Snapshot-summary keys of a MERGE commit: rows it inserted, updated and deleted.
INSERTED, UPDATED, DELETED = "icetide.inserted", "icetide.updated", "icetide.deleted"

#: Per table written: what its MERGE did (append-only tables are absent).
WriteResult = Mapping[str, Changes]


class Sink(Protocol):
    """Writes ``df`` to ``target`` in one commit whose summary holds ``props``.

    ``sides_done`` names side tables that already hold this batch (a previous attempt
    committed them, then died): the sink must not write those again. Returns, per
    primary-key table it MERGEd, the rows inserted, updated and deleted.
    """

    def side_tables(self) -> tuple[str, ...]:
        """Side tables the sink itself writes (e.g. a changelog)."""

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Mapping[str, str], sides_done: frozenset[str]) -> WriteResult:
        """Commit ``df`` to ``target``."""


class AppendSink:
    """Append-only targets."""

    def side_tables(self) -> tuple[str, ...]:
        return ()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Mapping[str, str], sides_done: frozenset[str]) -> WriteResult:
        commit.append(df, target, props)
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

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Mapping[str, str], sides_done: frozenset[str]) -> WriteResult:
        schema = spark.table(target).schema
        types = types_of(schema)
        batch = _temp_view("batch")
        df.createOrReplaceTempView(batch)
        spec = MergeSpec(target=quote_qualified(target), source=batch, keys=self.keys,
                         columns=[f.name for f in schema.fields], op_column=self.op_column,
                         ordinal_column=self.ordinal_column)
        collapsed_view = _temp_view("collapsed")
        collapsed = spark.sql(collapse_sql(self.engine, spec)).persist()
        collapsed.createOrReplaceTempView(collapsed_view)
        try:
            probe = probe_keys(collapsed, self.keys, types, rows_at_most=_rows_of(props))
            if probe.rows == 0:  # nothing to merge: the position advances alone
                commit.commit_marker_only(spark, target, props)
                return {target: Changes()}
            keys = probe.predicate
            changes = None
            if self.changelog and self.changelog not in sides_done:
                changes = self._append_changelog(spark, spec, types,
                                                 collapsed_view, props, keys)
            if changes is None:
                changes = _count_changes(spark, change_counts_sql(
                    self.engine, spec, types, collapsed_view=collapsed_view,
                    key_filter=keys))
            statement = merge_sql(self.engine, spec, collapsed_view=collapsed_view,
                                  key_filter=keys)
            commit.with_commit_properties(spark, {**props, **changes.summary()},
                                          lambda: _run(spark, statement))
            return {target: changes}
        finally:
            collapsed.unpersist()
            for view in (batch, collapsed_view):
                spark.catalog.dropTempView(view)

    def _append_changelog(self, spark: SparkSession, spec: MergeSpec, types: Mapping[str, str],
                          collapsed_view: str, props: Mapping[str, str],
                          keys: str | None) -> Changes:
        """Append the changelog of this MERGE; what it holds is what the MERGE will do."""
        assert self.changelog is not None
        base = changelog_seq_base(last_sequence_number(spark, self.changelog))
        rows = spark.sql(changelog_sql(self.engine, spec, types, seq_base=base,
                                       source_pos=props[POS], collapsed_view=collapsed_view,
                                       key_filter=keys))
        rows = rows.persist()
        try:
            ops = {r[0]: int(r[1]) for r in rows.groupBy(OP).count().collect()}
            commit.append(rows, self.changelog, {**props, ROWS: str(sum(ops.values()))})
            return Changes(ops.get("+I", 0), ops.get("+U", 0), ops.get("-D", 0))
        finally:
            rows.unpersist()


def _rows_of(props: Mapping[str, str]) -> int | None:
    """The batch's row count its marker states (``None`` without a marker): the collapsed
    rows are at most that many, which lets the key probe collect them in one job."""
    marker = Marker.from_summary(props)
    return None if marker is None else marker.rows


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

    def side_tables(self) -> tuple[str, ...]:
        return ()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Mapping[str, str], sides_done: frozenset[str]) -> WriteResult:
        from pyspark.sql import functions as F

        before = commit.load_table(spark, target).currentSnapshot()
        writer = df.writeTo(target)
        for key, value in props.items():
            writer = writer.option(f"snapshot-property.{key}", value)
        writer.overwrite(F.lit(True))
        after = commit.load_table(spark, target).currentSnapshot()
        if after is None or (before is not None
                             and after.snapshotId() == before.snapshotId()):
            log.info("overwrite of %s committed nothing: recording the marker alone", target)
            commit.commit_marker_only(spark, target, props)
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

    def side_tables(self) -> tuple[str, ...]:
        return self.inner.side_tables()

    def write(self, spark: SparkSession, df: DataFrame, target: str,
              props: Mapping[str, str], sides_done: frozenset[str]) -> WriteResult:
        with _target_lock(target):
            return self.inner.write(spark, df, target, props, sides_done)
