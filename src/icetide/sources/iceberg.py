"""Incremental reads of lake tables: the source of table-to-table flows.

``IcebergTableSource`` reads what changed in a table between two snapshots (position
``{"snapshot": id}``; ``None`` = before the first snapshot): the rows added and, for
snapshots that deleted or rewrote rows (``delete``/``overwrite``, whoever committed
them), the rows removed (:mod:`icetide.lake.changes`). A range of appends only is read
as Iceberg's incremental scan (the fast path); ``replace`` (compaction) changes no rows.
A primary-key table is streamed through its ``<table>__changelog`` (+I/-U/+U/-D),
flattened by :func:`flatten_changelog` into the table's columns plus ``_op``; a
changelog is a log, so deleting its rows (retention) removes nothing downstream.

Planning walks the snapshot ancestry from the current snapshot back to the committed
one and, with ``max_records``, stops early so one batch reads at most about that many
changed rows (at least one snapshot). Snapshot ranges are immutable, so a replay reads
the same rows. A snapshot that cannot be interpreted (equality deletes) or a position
that is gone (expired, or rolled back from) stops the flow with an error naming the
table, the snapshot and the fix — never a silent skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.errors import PositionLostError, SourceError
from icetide.lake.metadata import SnapshotInfo, TableMetadata
from icetide.model.positions import TableSnapshotPosition
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icetide.lake.changes import RangeChanges

_CHANGE_OPS = frozenset({"overwrite", "delete"})  # "replace" (compaction) changes no rows
#: Summary keys of rows a snapshot removed: copy-on-write, position and equality deletes.
_REMOVED_KEYS = ("deleted-records", "added-position-deletes", "added-equality-deletes")


@dataclass(frozen=True)
class Step:
    """One snapshot of a range: the rows it changed (from its summary) and whether it
    removed any (then the range is read as changes, not as an incremental append)."""

    snapshot_id: int
    rows: int
    removes: bool


def snapshot_step(snapshot_id: int, operation: str | None, summary: Mapping[str, str], *,
                  log: bool = False) -> Step:
    """What one snapshot changed, by its summary. ``log``: the table is a changelog,
    whose deleted rows (retention) are no change downstream."""
    added = int(summary.get("added-records", "0")) if operation != "replace" else 0
    if operation not in _CHANGE_OPS or log:
        return Step(snapshot_id, added if operation in ("append", None) or log else 0, False)
    removed = sum(int(summary.get(k, "0")) for k in _REMOVED_KEYS)
    return Step(snapshot_id, added + removed, removed > 0 or operation == "overwrite")


class IcebergTableSource(Source[TableSnapshotPosition]):
    """The changes of a lake table; key ``iceberg:<catalog.db.table>``."""

    def __init__(self, spark: SparkSession, ident: str, *, upserts: bool = False,
                 log_of: str | None = None) -> None:
        self.spark = spark
        self.ident = ident
        self.key = str(SourceKey.iceberg(ident))
        #: A primary-key table read without a changelog: its MERGE commits (operation
        #: overwrite/delete) cannot be streamed, so meeting one is an error, never a skip.
        self.upserts = upserts
        #: The primary-key table this changelog side table logs (``None``: not a
        #: changelog): only the changelog's appended rows are changes.
        self.log_of = log_of
        self._open: dict[tuple[int | None, int | None], RangeChanges] = {}

    def _metadata(self) -> TableMetadata:
        from icetide.lake.commit import read_metadata

        return read_metadata(self.spark, self.ident)

    def initial_position(self) -> TableSnapshotPosition:
        return {"snapshot": None}

    def lake_inputs(self) -> tuple[str, ...]:
        return (self.ident,)

    def _step(self, snap: SnapshotInfo, start: int | None) -> Step:
        step = snapshot_step(snap.snapshot_id, snap.operation, snap.summary,
                             log=self.log_of is not None)
        if self.upserts and start is not None and step.removes:
            raise SourceError(
                f"{self.ident} is a primary-key table without a changelog and snapshot "
                f"{snap.snapshot_id} changed rows ({snap.operation}); streaming it would miss "
                "those changes: declare the table with changelog=True (then rebuild this "
                "flow's target), or read it with dp.read() as a lookup")
        if step.removes and int(snap.summary.get("added-equality-deletes", "0")):
            from icetide.lake.changes import ChangeNotReadable

            raise ChangeNotReadable(self.ident, snap.snapshot_id, str(snap.operation),
                                    "wrote equality deletes, which icetide cannot turn into "
                                    "removed rows")
        return step

    def _ancestry(self, start: int | None) -> list[Step]:
        """The snapshots after ``start`` up to current, oldest first."""
        chain: list[Step] = []
        reached = start is None
        metadata = self._metadata()
        for snap in metadata.ancestors():
            if snap.snapshot_id == start:
                reached = True
                break
            chain.append(self._step(snap, start))
        if not reached:
            raise self._lost(start, metadata)
        return chain[::-1]

    def _lost(self, start: int | None, metadata: TableMetadata) -> SourceError:
        table = self.ident.split(".", 1)[-1]
        if start in metadata.snapshots:  # still there, but no longer an ancestor
            from icetide.lake.changes import ChangeNotReadable

            current = metadata.current_snapshot_id
            return ChangeNotReadable(
                self.ident, current, "rollback", f"is not a descendant of snapshot {start}, "
                "where this flow stopped reading (the table was rolled back or its branch "
                "replaced), so what was undone cannot be told apart from what is new")
        return PositionLostError(
            f"snapshot {start} of {self.ident}, where this flow stopped reading, is no "
            "longer in the table's history: it was expired (the flow fell further behind "
            "than maintenance.max_consumer_lag, or snapshots were expired by hand), so "
            "the rows committed after it cannot be read incrementally and are never "
            "skipped. Remedy: rebuild this flow's target from what its inputs hold now: "
            f"`icetide table refresh <target>` (the flow then reads {table} in full from "
            "its current snapshot)")

    def plan(self, start: TableSnapshotPosition, max_records: int | None = None
            ) -> BatchRange[TableSnapshotPosition] | None:
        chain = self._ancestry(start["snapshot"])
        if not chain:
            return None
        end, total, removes, taken = None, 0, False, 0
        refresh = "refresh" in start  # icetide table refresh: read it all, in one batch
        for step in chain:
            if (end is not None and max_records is not None and not refresh
                    and total + step.rows > max_records):
                break
            end, total, removes = step.snapshot_id, total + step.rows, removes or step.removes
            taken += 1
        # stopped short of the newest snapshot: more is waiting (the loop goes on at once)
        return BatchRange(start, {"snapshot": end}, total,
                          {"removes": removes and not refresh, "refresh": refresh,
                           "caught_up": taken == len(chain)})

    def plan_to(self, start: TableSnapshotPosition, end: TableSnapshotPosition
            ) -> BatchRange[TableSnapshotPosition]:
        if start == end:
            return BatchRange(start, end, 0, {"removes": False, "refresh": False})
        chain = self._ancestry(start["snapshot"])
        ids = [s.snapshot_id for s in chain]
        if end["snapshot"] not in ids:
            raise SourceError(f"snapshot {end['snapshot']} is not after {start} in {self.ident}")
        taken = chain[: ids.index(end["snapshot"]) + 1]
        refresh = "refresh" in start
        return BatchRange(start, end, sum(s.rows for s in taken),
                          {"removes": any(s.removes for s in taken) and not refresh,
                           "refresh": refresh})

    def _changes(self, batch: BatchRange[TableSnapshotPosition]) -> RangeChanges:
        from icetide.lake.changes import range_changes

        begin, end = batch.start["snapshot"], batch.end["snapshot"]
        assert end is not None
        key = (begin, end)
        if key not in self._open:
            self._open[key] = range_changes(self.spark, self.ident, begin, end)
        return self._open[key]

    def read(self, spark: SparkSession, batch: BatchRange[TableSnapshotPosition]) -> DataFrame:
        """The rows the range added."""
        reader = spark.read.format("iceberg")
        begin, end = batch.start["snapshot"], batch.end["snapshot"]
        if end is None or begin == end:
            return spark.table(self.ident).limit(0)
        if begin is None:
            return reader.option("snapshot-id", end).load(self.ident)
        if batch.info.get("removes"):
            return self._changes(batch).added()
        return (reader.option("start-snapshot-id", begin).option("end-snapshot-id", end)
                .load(self.ident))

    def removed(self, spark: SparkSession, batch: BatchRange[TableSnapshotPosition]
                ) -> DataFrame | None:
        """The rows the range removed; ``None`` when it removed none (the append path)."""
        if not batch.info.get("removes") or batch.start["snapshot"] is None:
            return None
        return self._changes(batch).removed()

    def full(self, spark: SparkSession, batch: BatchRange[TableSnapshotPosition]) -> DataFrame:
        """Every row the table holds at the range's end (a recomputation's input); for a
        changelog, the rows of the table it logs as of the batch it ends with."""
        table, end = self.log_of or self.ident, batch.end["snapshot"]
        if end is not None and self.log_of is not None:
            end = self._logged_state(end)
        if end is None:
            return spark.table(table).limit(0)
        return spark.read.format("iceberg").option("snapshot-id", end).load(table)

    def _logged_state(self, end: int) -> int | None:
        """The snapshot of the logged table committed by the batch whose changelog rows
        end at changelog snapshot ``end`` (both commits carry the batch's marker)."""
        from icetide.lake.commit import read_metadata
        from icetide.model.markers import Marker, same_position

        assert self.log_of is not None
        marker = next((m for s in self._metadata().ancestors(end)
                       if (m := Marker.from_summary(s.summary)) is not None), None)
        if marker is None:
            return None
        for snap in read_metadata(self.spark, self.log_of).ancestors():
            found = Marker.from_summary(snap.summary)
            if found and found.flow == marker.flow and same_position(found.end, marker.end):
                return snap.snapshot_id
        from icetide.errors import SourceUnavailableError

        raise SourceUnavailableError(
            f"{self.log_of} has not committed the batch its changelog ends with (flow "
            f"{marker.flow}): its writer finishes it when it resumes; retrying")

    def release(self, batch: BatchRange[TableSnapshotPosition]) -> None:
        found = self._open.pop((batch.start["snapshot"], batch.end["snapshot"]), None)
        if found is not None:
            found.close()

    def newest_event_ms(self, position: TableSnapshotPosition) -> int | None:
        from icetide.lake.commit import newest_event_at

        snapshot = position.get("snapshot")
        return None if snapshot is None else newest_event_at(self.spark, self.ident, snapshot)

    def lag(self, position: TableSnapshotPosition) -> dict[str, object]:
        chain = self._ancestry(position["snapshot"])
        return {"snapshots": len(chain), "rows": sum(s.rows for s in chain),
                "removes": any(s.removes for s in chain)}


def flatten_changelog(changes: DataFrame, columns: list[str]) -> DataFrame:
    """Changelog rows → the table's ``columns`` (after image, before image for -U/-D) + ``_op``."""
    from pyspark.sql import functions as F

    from icetide.tables.changelog import AFTER, BEFORE, COMMIT_TS, OP, SEQ

    image = F.when(F.col(OP).isin("-U", "-D"), F.col(BEFORE)).otherwise(F.col(AFTER))
    return changes.select(*[image.getField(c).alias(c) for c in columns], OP, SEQ, COMMIT_TS)
