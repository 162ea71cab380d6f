"""Incremental reads of a Hudi table: the source of a flow reading a Hudi table with
``dp.read_stream`` (key ``hudi:<catalog.db.table>``), streamed as an Iceberg primary-key
table's changelog is: the table's columns plus ``_op`` (``+I/-U/+U/-D``), ``_seq`` and
``_commit_ts``, deletes included.

* **Position** ``{"instant": <completion time>}`` of the last completed commit read; a
  batch is the completed commits after it, oldest first (``max_records`` stops early by
  their write statistics); compactions, clustering and cleaning are read as nothing.
* **What changed**: Hudi's CDC query (needs ``hoodie.table.cdc.enabled``, set on the
  tables icetide creates) names the keys; their rows come typed from Hudi snapshot reads
  as of the range's first and last commit, joined on those keys (before image →
  ``-U``/``-D``, after image → ``+I``/``+U``). The first batch reads the table as inserts.

A range is immutable, so a replay reads the same rows; a position older than the oldest
commit Hudi keeps stops the flow (:class:`~icetide.errors.PositionLostError`). Why the
CDC query's own images are not used: docs/semantics.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from icetide.errors import PositionLostError, SourceError
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey
from icetide.tables.changelog import COMMIT_TS, OP, SEQ

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icetide.lake.hudi import HudiTable

#: Operations of commits that rewrite files without changing rows (table services).
SERVICE_OPERATIONS = ("COMPACT", "LOG_COMPACT", "CLUSTER", "INSERT_OVERWRITE_TABLE_REPLACE")
#: Rows a batch may number in ``_seq`` under one commit time (``ms * SEQ_SPAN + n``).
SEQ_SPAN = 1_000_000
CDC_ENABLED = "hoodie.table.cdc.enabled"


class HudiPosition(TypedDict):
    """The completion time of the last commit read (``None``: nothing read yet)."""

    instant: str | None


@dataclass(frozen=True)
class Commit:
    """A completed commit: when requested (its rows' ``_hoodie_commit_time``), when
    completed (the position), and the rows it changed by its write statistics."""

    requested: str
    completed: str
    rows: int


class HudiTableSource(Source[HudiPosition]):
    """The changes of a Hudi table; key ``hudi:<catalog.db.table>``."""

    def __init__(self, spark: SparkSession, table: HudiTable) -> None:
        self.spark = spark
        self.table = table
        self.key = str(SourceKey.hudi(table.ident))

    def initial_position(self) -> HudiPosition:
        return {"instant": None}

    def lake_inputs(self) -> tuple[str, ...]:
        return (self.table.ident,)

    def commits(self) -> list[Commit]:
        """The table's completed writes, in completion order (Hudi's active timeline)."""
        from icetide.lake.hudi import completed_commits, exists

        if not exists(self.spark, self.table.path):  # declared, no commit yet
            return []
        found = []
        for requested, completed, meta in completed_commits(self.spark, self.table.path):
            rows = 0 if str(meta.getOperationType()) in SERVICE_OPERATIONS else (
                int(meta.fetchTotalInsertRecordsWritten())
                + int(meta.fetchTotalUpdateRecordsWritten()) + int(meta.getTotalRecordsDeleted()))
            found.append(Commit(requested, completed, rows))
        return sorted(found, key=lambda c: c.completed)

    def _after(self, start: str | None) -> list[Commit]:
        every = self.commits()
        if start is None or any(c.completed == start for c in every):
            return [c for c in every if start is None or c.completed > start]
        raise PositionLostError(
            f"commit {start} of {self.table.ident}, where this flow stopped reading, is no "
            "longer in the table's active timeline (archived or cleaned by Hudi), so the "
            "changes after it cannot be read incrementally and are never skipped. Remedy: "
            "`icetide table refresh <target>` (the flow then reads the table in full)")

    def plan(self, start: HudiPosition, max_records: int | None = None
             ) -> BatchRange[HudiPosition] | None:
        chain = self._after(start["instant"])
        if not chain:
            return None
        taken: list[Commit] = []
        for commit in chain:
            if taken and max_records is not None and sum(c.rows for c in taken) + commit.rows \
                    > max_records:
                break
            taken.append(commit)
        batch = self._range(start, taken)
        batch.info["caught_up"] = len(taken) == len(chain)  # stopped short: more is waiting
        return batch

    def plan_to(self, start: HudiPosition, end: HudiPosition) -> BatchRange[HudiPosition]:
        if start == end:
            return BatchRange(start, end, 0, {"requested": None})
        chain = self._after(start["instant"])
        ends = [c.completed for c in chain]
        if end["instant"] not in ends:
            raise SourceError(f"commit {end['instant']} is not after {start} in "
                              f"{self.table.ident}")
        return self._range(start, chain[: ends.index(end["instant"]) + 1])

    def _range(self, start: HudiPosition, taken: list[Commit]) -> BatchRange[HudiPosition]:
        """``start`` to the last of ``taken``; ``info`` keeps the requested times the
        snapshot reads travel to."""
        first = self._requested(start["instant"])
        return BatchRange(start, {"instant": taken[-1].completed}, sum(c.rows for c in taken),
                          {"requested": taken[-1].requested, "start_requested": first})

    def _requested(self, completed: str | None) -> str | None:
        return next((c.requested for c in self.commits() if c.completed == completed), None)

    def read(self, spark: SparkSession, batch: BatchRange[HudiPosition]) -> DataFrame:
        """The range's changes as the table's columns + ``_op``, ``_seq``, ``_commit_ts``."""
        from icetide.lake.hudi_changes import changes, inserted

        end = batch.info.get("requested")
        if end is None or batch.start == batch.end:
            return inserted(spark, self.table, None, None)
        if batch.start["instant"] is None:
            return inserted(spark, self.table, str(end), batch.end["instant"])
        self._check_cdc(spark)
        return changes(spark, self.table, batch.start["instant"], str(batch.end["instant"]),
                       str(batch.info.get("start_requested")), str(end))

    def _check_cdc(self, spark: SparkSession) -> None:
        from icetide.lake.hudi import table_config

        if table_config(spark, self.table.path).get(CDC_ENABLED, "false") != "true":
            raise SourceError(
                f"{self.table.ident} is a Hudi table without {CDC_ENABLED}=true, so its "
                "deletes cannot be read incrementally: recreate it (icetide sets it on the "
                "Hudi tables it creates), or read it with dp.read() as a lookup")

    def full(self, spark: SparkSession, batch: BatchRange[HudiPosition]) -> DataFrame:
        """The table's rows as of the range's end (a recomputation's input)."""
        from icetide.lake.hudi import read

        end = batch.info.get("requested")
        return read(spark, self.table, None if end is None else str(end))

    def lag(self, position: HudiPosition) -> dict[str, object]:
        chain = self._after(position["instant"])
        return {"commits": len(chain), "rows": sum(c.rows for c in chain)}


__all__ = ["COMMIT_TS", "OP", "SEQ", "HudiPosition", "HudiTableSource"]
