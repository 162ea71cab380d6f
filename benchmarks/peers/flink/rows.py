"""The row check of the upserted tables: icetide's against the peer's, every column.

The peer's GROUP BY and CDC tables carry equality deletes (Flink's upsert), which pyiceberg
cannot apply, so both sides are read through Spark (icetide's session, which reads the
peer's hadoop-catalog table by its path); the ODS hop keeps its pyiceberg check
(:func:`.measure.row_check`), its table being append-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from benchmarks.peers.flink.engine import FlinkJob

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Compared:
    """Two tables keyed by their first column: ours (icetide's) and theirs."""

    ours: int  # rows
    theirs: int
    same: bool  # every column of every row, as sorted rows
    only_ours: int  # keys in one table and not the other
    only_theirs: int
    differ: int  # keys in both whose rows differ


def compare(ours: Sequence[Row], theirs: Sequence[Row]) -> Compared:
    """Compare two tables' rows (the key first in each row)."""
    mine = {r[0]: r for r in ours}
    peer = {r[0]: r for r in theirs}
    differ = sum(1 for k in mine.keys() & peer.keys() if mine[k] != peer[k])
    return Compared(len(ours), len(theirs), sorted(ours, key=repr) == sorted(theirs, key=repr),
                    len(mine.keys() - peer.keys()), len(peer.keys() - mine.keys()), differ)


def lake_rows(spark: SparkSession, table: str, columns: Sequence[str]) -> list[Row]:
    """``columns`` of every row of an icetide table (``lake.db.table``)."""
    return [tuple(r) for r in spark.table(table).select(*columns).collect()]


def flink_rows(spark: SparkSession, job: FlinkJob, columns: Sequence[str]) -> list[Row]:
    """``columns`` of every row of the table ``job`` writes, its deletes applied."""
    path = job.warehouse.joinpath(*job.ident)
    frame = spark.read.format("iceberg").load(f"file://{path}")
    return [tuple(r) for r in frame.select(*columns).collect()]
