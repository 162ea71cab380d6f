"""Incremental reads of lake tables: the source of table-to-table flows.

``IcebergTableSource`` reads what was *appended* to a table between two snapshots
(position ``{"snapshot": id}``; ``None`` = before the first snapshot). That is exact for
append-only tables (facts, dead letters) and for changelog tables — which is how a
primary-key table is streamed: its ``<table>__changelog`` rows (+I/-U/+U/-D) are
flattened by :func:`flatten_changelog` into the table's columns plus ``_op``.

Planning walks the snapshot ancestry from the current snapshot back to the committed
one and, with ``max_records``, stops early so one batch reads at most about that many
appended rows (at least one snapshot). Snapshot ranges are immutable, so a replay reads
the same rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icetide.errors import PositionLostError, SourceError
from icetide.lake.metadata import TableMetadata
from icetide.model.positions import TableSnapshotPosition
from icetide.model.source import BatchRange, Source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_APPEND_OPS = frozenset({"append"})
_CHANGE_OPS = frozenset({"overwrite", "delete"})  # "replace" (compaction) changes no rows


class IcebergTableSource(Source[TableSnapshotPosition]):
    """The appended rows of a lake table; key ``iceberg:<catalog.db.table>``."""

    def __init__(self, spark: SparkSession, ident: str, *, upserts: bool = False) -> None:
        self.spark = spark
        self.ident = ident
        self.key = f"iceberg:{ident}"
        #: A primary-key table read without a changelog: its MERGE commits (operation
        #: overwrite/delete) cannot be streamed, so meeting one is an error, never a skip.
        self.upserts = upserts

    def _metadata(self) -> TableMetadata:
        from icetide.lake.commit import read_metadata

        return read_metadata(self.spark, self.ident)

    def initial_position(self) -> TableSnapshotPosition:
        return {"snapshot": None}

    def lake_inputs(self) -> tuple[str, ...]:
        return (self.ident,)

    def _ancestry(self, start: int | None) -> list[tuple[int, int]]:
        """``(snapshot_id, appended rows)`` after ``start`` up to current, oldest first."""
        chain: list[tuple[int, int]] = []
        reached = start is None
        for snap in self._metadata().ancestors():
            if snap.snapshot_id == start:
                reached = True
                break
            op = snap.operation
            if self.upserts and start is not None and op in _CHANGE_OPS:
                raise SourceError(
                    f"{self.ident} is a primary-key table without a changelog and snapshot "
                    f"{snap.snapshot_id} changed rows ({op}); streaming it would miss those "
                    "changes: declare the table with changelog=True (then rebuild this "
                    "flow's target), or read it with dp.read() as a lookup")
            added = int(snap.summary.get("added-records", "0")) if op in _APPEND_OPS else 0
            chain.append((snap.snapshot_id, added))
        if not reached:
            raise PositionLostError(
                f"snapshot {start} of {self.ident}, where this flow stopped reading, is no "
                "longer in the table's history: it was expired (the flow fell further behind "
                "than maintenance.max_consumer_lag, or snapshots were expired by hand), so "
                "the rows committed after it cannot be read incrementally and are never "
                "skipped. Remedy: a full refresh of this flow's target table — drop it "
                "(icetide sql \"DROP TABLE <target>\") and run the pipeline again; the flow "
                f"then reads {self.ident} in full from its current snapshot")
        return chain[::-1]

    def plan(self, start: TableSnapshotPosition, max_records: int | None = None
            ) -> BatchRange[TableSnapshotPosition] | None:
        chain = self._ancestry(start["snapshot"])
        if not chain:
            return None
        end, total = None, 0
        for snap_id, added in chain:
            if end is not None and max_records is not None and total + added > max_records:
                break
            end, total = snap_id, total + added
        return BatchRange(start, {"snapshot": end}, total)

    def plan_to(self, start: TableSnapshotPosition, end: TableSnapshotPosition
            ) -> BatchRange[TableSnapshotPosition]:
        if start == end:
            return BatchRange(start, end, 0)
        chain = self._ancestry(start["snapshot"])
        ids = [s for s, _ in chain]
        if end["snapshot"] not in ids:
            raise SourceError(f"snapshot {end['snapshot']} is not after {start} in {self.ident}")
        rows = sum(a for s, a in chain[: ids.index(end["snapshot"]) + 1])
        return BatchRange(start, end, rows)

    def read(self, spark: SparkSession, batch: BatchRange[TableSnapshotPosition]) -> DataFrame:
        reader = spark.read.format("iceberg")
        begin, end = batch.start["snapshot"], batch.end["snapshot"]
        if end is None or begin == end:
            return spark.table(self.ident).limit(0)
        if begin is None:
            return reader.option("snapshot-id", end).load(self.ident)
        return (reader.option("start-snapshot-id", begin).option("end-snapshot-id", end)
                .load(self.ident))

    def newest_event_ms(self, position: TableSnapshotPosition) -> int | None:
        from icetide.lake.commit import newest_event_at

        snapshot = position.get("snapshot")
        return None if snapshot is None else newest_event_at(self.spark, self.ident, snapshot)

    def lag(self, position: TableSnapshotPosition) -> dict[str, object]:
        chain = self._ancestry(position["snapshot"])
        return {"snapshots": len(chain), "rows": sum(a for _, a in chain)}


def flatten_changelog(changes: DataFrame, columns: list[str]) -> DataFrame:
    """Changelog rows → the table's ``columns`` (after image, before image for -U/-D) + ``_op``."""
    from pyspark.sql import functions as F

    from icetide.tables.changelog import AFTER, BEFORE, COMMIT_TS, OP, SEQ

    image = F.when(F.col(OP).isin("-U", "-D"), F.col(BEFORE)).otherwise(F.col(AFTER))
    return changes.select(*[image.getField(c).alias(c) for c in columns], OP, SEQ, COMMIT_TS)
