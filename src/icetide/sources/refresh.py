"""The source of a materialized-view refresh: the snapshot ids of the view's input tables.

A materialized view (``@dp.materialized_view``) is recomputed from its inputs' current
contents. Its position is ``{"catalog.db.table": snapshot_id, ...}`` — the input
snapshots the stored result was computed from. ``plan`` compares that with the inputs'
current snapshot ids: nothing changed → ``None`` (no refresh); anything changed → one
batch ``[committed ids, current ids)``. The refresh reads every input *at the planned
snapshot id* (see :mod:`icetide.engine.compile.refresh`), so a replay of the same range
computes the same result, and the overwrite commit carries the new ids as its marker.

How often a continuous run refreshes (``icetide.refresh-interval``) is the pipeline
scheduler's business (the flow's minimum spacing, :attr:`icetide.flows.loop.Flow.
min_spacing`), not the source's: ``--once`` and a drain always refresh a stale view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.errors import SourceError, listed
from icetide.model.positions import SnapshotIdsPosition
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class SnapshotIdsSource(Source[SnapshotIdsPosition]):
    """Changes of a set of tables' current snapshots; key ``refresh:<target>``."""

    def __init__(self, spark: SparkSession, target: str, inputs: Sequence[str]) -> None:
        if not inputs:
            raise SourceError(
                f"materialized view {target} reads no table with dp.read(): a refresh has "
                "nothing to watch; read its inputs with dp.read('db.table')"
            )
        self.spark = spark
        self.target = target
        self.inputs = tuple(sorted(set(inputs)))
        self.key = str(SourceKey(SourceKey.REFRESH, target))

    def initial_position(self) -> SnapshotIdsPosition:
        return {}

    def lake_inputs(self) -> tuple[str, ...]:
        return self.inputs

    def current(self) -> dict[str, int | None]:
        """The inputs' current snapshot ids (``None`` for a table without snapshots)."""
        from icetide.lake.commit import load_table

        ids: dict[str, int | None] = {}
        for ident in self.inputs:
            snap = load_table(self.spark, ident).currentSnapshot()
            ids[ident] = None if snap is None else int(snap.snapshotId())
        return ids

    def _changed(self, start: SnapshotIdsPosition, end: SnapshotIdsPosition) -> int:
        """How many inputs differ between two positions (the batch's ``records``)."""
        return sum(1 for ident in self.inputs if start.get(ident, -1) != end.get(ident, -1))

    def plan(self, start: SnapshotIdsPosition, max_records: int | None = None
            ) -> BatchRange[SnapshotIdsPosition] | None:
        end = self.current()
        changed = self._changed(start, end)
        if not changed:
            return None
        return BatchRange(start, end, changed, {"changed": changed})

    def plan_to(self, start: SnapshotIdsPosition, end: SnapshotIdsPosition
            ) -> BatchRange[SnapshotIdsPosition]:
        unknown = sorted(set(end) - set(self.inputs))
        if unknown:
            raise SourceError(
                f"refresh position of {self.target} names tables {listed(unknown)} that the "
                f"view no longer reads (inputs: {listed(self.inputs)}); drop the view to rebuild it"
            )
        return BatchRange(start, end, self._changed(start, end))

    def read(self, spark: SparkSession, batch: BatchRange[SnapshotIdsPosition]) -> DataFrame:
        """The pinned snapshot ids as rows ``(table, snapshot)`` (for inspection)."""
        rows = [(ident, batch.end.get(ident)) for ident in self.inputs]
        return spark.createDataFrame(rows, "table string, snapshot bigint")

    def newest_event_ms(self, position: SnapshotIdsPosition) -> int | None:
        from icetide.lake.commit import newest_event_at

        found = [newest_event_at(self.spark, ident, snap) for ident, snap in position.items()
                 if snap is not None]
        return max((f for f in found if f is not None), default=None)

    def lag(self, position: SnapshotIdsPosition) -> dict[str, object]:
        return {"stale_inputs": self._changed(position, self.current())}
