"""Retract rows from an append table by position, when a batch only removes rows.

An erase upstream (a GDPR delete) reaches a stateless flow as a batch of retractions with
nothing to insert. :mod:`icetide.lake.retract`'s MERGE matches each retraction on all
its columns: it reads the target's candidate rows a second time and sorts both sides on
every column. Here the candidates' scan also reads each row's position (``_file``,
``_pos``), the rows to remove are chosen from it (as the MERGE chooses them), and a
``DELETE`` names them by position: its scan reads no data column, and it removes exactly
the copies chosen (no copy is deleted and put back). The ``DELETE`` commits with the
flow's marker and names the removed rows' file, as the MERGE does.

A position is only valid at the snapshot it was read at. The candidates are read at the
target's current snapshot; the ``DELETE`` runs only while that is still current (else the
MERGE does the batch: it matches by value), and its commit must follow that snapshot
directly or through appends, which move no row (else :class:`StalePositions`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from icetide.errors import IcetideError
from icetide.lake import commit
from icetide.lake.changes import COPIES, FILE, POS, REMOVED_ROWS, write_removed
from icetide.lake.retract import (
    RETRACT,
    UnmatchedRetraction,
    append_with_retractions,
    candidates,
    chosen_rows,
    match_columns,
    summarized,
)
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)
_views = itertools.count()


class StalePositions(IcetideError):
    """A position DELETE committed after a commit that moved rows: it may have missed some."""

    def __init__(self, target: str, read_at: int, operation: str, snapshot: int) -> None:
        super().__init__(
            f"{target}: the rows to retract were located at snapshot {read_at}, and "
            f"snapshot {snapshot} ({operation}) committed before the DELETE that removed "
            "them by position, so it may have missed rows that moved. Rebuild the table "
            f"from its inputs: `icetide table refresh {target.split('.', 1)[-1]}`")


def only_retracts(df: DataFrame) -> bool:
    """Whether the batch retracts rows and inserts none (one job over the cached batch)."""
    from pyspark.sql import functions as F

    row = df.agg(F.count_if(F.col(RETRACT).isNull()).alias("i"),
                 F.count_if(F.col(RETRACT).isNotNull()).alias("r")).collect()[0]
    return int(row["i"]) == 0 and int(row["r"]) > 0


def delete_statement(target: str, view: str) -> str:
    """The ``DELETE`` of the positions in ``view`` (broadcast: a few MB per 100,000)."""
    return (f"DELETE FROM {quote_qualified(target)} AS t WHERE EXISTS (SELECT /*+ "
            f"BROADCAST(s) */ 1 FROM {view} AS s WHERE s.{FILE} = t.{FILE} "
            f"AND s.{POS} = t.{POS})")


def _current(spark: SparkSession, target: str) -> int | None:
    snap = commit.load_table(spark, target).currentSnapshot()
    return None if snap is None else int(snap.snapshotId())


def _chosen(spark: SparkSession, df: DataFrame, target: str, snapshot: int,
            held: list[DataFrame]) -> tuple[str, int, int]:
    """The stored rows to remove, read at ``snapshot`` with their positions and written to
    the file the commit names (:func:`write_removed`): its path, how many rows it holds
    (from the Parquet footers) and how many were retracted. Two small jobs and one that
    scans, chooses and writes: the written file is then read for the positions."""
    from pyspark.sql import functions as F

    match, columns, wanted, want, narrow = summarized(df, held)
    stored = (spark.read.format("iceberg").option("snapshot-id", snapshot).load(target)
              .select(*columns, FILE, POS))
    if narrow is not None:
        stored = stored.alias("t").where(narrow)
    chosen = chosen_rows(candidates(stored, wanted, match), [*columns, FILE, POS], match)
    path = write_removed(spark, target, chosen.select(*columns, F.lit(1).alias(COPIES),
                                                      FILE, POS))
    return path, spark.read.parquet(path).count(), want


def retract_by_position(spark: SparkSession, df: DataFrame, target: str,
                        props: Mapping[str, str]) -> int:
    """Retract the batch's rows from ``target`` in one ``DELETE`` commit carrying
    ``props``; the rows retracted. The batch must :func:`only_retracts`."""
    snapshot = _current(spark, target)
    if snapshot is None:  # nothing stored: the MERGE reports the rows it cannot find
        return append_with_retractions(spark, df, target, props)
    held: list[DataFrame] = []
    view = f"__icetide_positions_{next(_views)}"
    try:  # the removed rows' file is written before the commit: an orphan if it fails
        removed, taken, want = _chosen(spark, df, target, snapshot, held)
        if taken < want:
            raise UnmatchedRetraction(target, want - taken, match_columns(df))
        if _current(spark, target) != snapshot:
            log.info("%s: committed to since its rows were located; retracting by value",
                     target)
            return append_with_retractions(spark, df, target, props)
        spark.read.parquet(removed).select(FILE, POS).createOrReplaceTempView(view)
        commit.with_commit_properties(spark, {**props, REMOVED_ROWS: removed},
                                      lambda: _run(spark, delete_statement(target, view)))
        _check_followed(spark, target, snapshot, props)
    finally:
        spark.catalog.dropTempView(view)
        for frame in held:
            frame.unpersist()
    return taken


def _run(spark: SparkSession, statement: str) -> None:
    spark.sql(statement)


def _check_followed(spark: SparkSession, target: str, snapshot: int,
                    props: Mapping[str, str]) -> None:
    """Raise :class:`StalePositions` unless the commit just made follows ``snapshot``
    directly or through appends only (the DELETE's scan then saw the same positions)."""
    done = commit.committed(spark, target, props)
    if done is None or done.parent is None:
        return
    for snap in commit.read_metadata(spark, target).ancestors(done.parent):
        if snap.snapshot_id == snapshot:
            return  # (an expired snapshot ends the walk: nothing left to compare)
        if snap.operation != "append":
            raise StalePositions(target, snapshot, str(snap.operation), snap.snapshot_id)
