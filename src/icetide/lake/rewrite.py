"""A small copy-on-write table's MERGE done as one overwrite of the whole table.

:func:`whole_table_rewrite` decides: the table is copy-on-write for MERGE (its MERGE
rewrites the files it touches), has no delete files and at most
:data:`REWRITE_MAX_ROWS` rows. :func:`rewrite` then writes the rows the MERGE would
leave (:mod:`icetide.tables.rewrite_sql`) in one ``overwrite`` commit carrying the
batch's marker, validated against the snapshot it read: any data or delete committed to
the table since makes the commit fail as a conflict (the flow retries the batch), so
nothing another writer added is overwritten unseen. The changes it made are counted on
the write's own pass (an observation), not by a job after the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.lake import commit
from icetide.lake.observation import observed
from icetide.tables.changelog import AFTER, change_counts, change_counts_sql
from icetide.tables.merge_sql import EngineLike, MergeSpec
from icetide.tables.rewrite_sql import rewrite_parts

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: Up to this many rows, a copy-on-write table's MERGE is written as the whole table: a
#: few files of well under a second's writing, most of which its MERGE would rewrite
#: anyway (docs/architecture.md, "Primary-key tables, changelogs, layers").
REWRITE_MAX_ROWS = 10_000
_COPY_ON_WRITE = "copy-on-write"


@dataclass(frozen=True)
class WholeTable:
    """The snapshot a whole-table rewrite reads and validates from (``None``: none yet)."""

    snapshot_id: int | None


def whole_table_rewrite(table: JavaObject) -> WholeTable | None:
    """The snapshot to rewrite ``table`` (a Java Iceberg ``Table``) from, or ``None`` when
    its MERGE is better run as a MERGE: merge-on-read (a MERGE writes only the changed
    rows), delete files present, or more than :data:`REWRITE_MAX_ROWS` rows."""
    if str(table.properties().get("write.merge.mode") or "") != _COPY_ON_WRITE:
        return None
    snap = table.currentSnapshot()
    if snap is None:
        return WholeTable(None)
    summary = snap.summary()
    rows = int(summary.get("total-records") or 0)
    deletes = int(summary.get("total-delete-files") or 0)
    if deletes or rows > REWRITE_MAX_ROWS:
        return None
    return WholeTable(int(snap.snapshotId()))


@dataclass(frozen=True)
class Rewrite:
    """One batch's whole-table rewrite: what its statements and its commit need."""

    ident: str  # the target, catalog-qualified
    engine: EngineLike
    spec: MergeSpec
    types: Mapping[str, str]
    collapsed_view: str
    props: Mapping[str, str]
    base: WholeTable


def rewrite(spark: SparkSession, job: Rewrite) -> tuple[int, int, int]:
    """Overwrite ``job.ident`` with the rows the MERGE would leave, in one commit carrying
    ``job.props``; returns the rows inserted, updated and deleted."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    parts = rewrite_parts(job.engine, job.spec, job.types, collapsed_view=job.collapsed_view,
                          as_of=job.base.snapshot_id)
    seen = Observation()
    counts = [F.expr(expr).alias(name) for name, expr in change_counts(job.types).items()]
    changed = spark.sql(parts.changed).observe(seen, *counts)
    after = changed.where(F.col(AFTER).isNotNull()).select(f"{AFTER}.*")
    rows = after.unionByName(spark.sql(parts.kept)).coalesce(1)
    writer = commit.writer(rows, job.ident, job.props).option("isolation-level", "serializable")
    if job.base.snapshot_id is not None:
        writer = writer.option("validate-from-snapshot-id", str(job.base.snapshot_id))
    writer.overwrite(F.lit(True))
    figures = observed(seen, f"count of the rows rewritten in {job.ident}")
    if set(figures) != {"inserted", "updated", "deleted"}:
        figures = _counted(spark, job)
    return int(figures["inserted"]), int(figures["updated"]), int(figures["deleted"])


def _counted(spark: SparkSession, job: Rewrite) -> dict[str, int]:
    """The changes counted after the commit, when the write's observation brought none:
    against the snapshot it read, or, for a table that had none, every row inserted."""
    log.info("no observed rewrite figures: counting against the snapshot it read")
    if job.base.snapshot_id is None:
        return {"inserted": spark.table(job.ident).count(), "updated": 0, "deleted": 0}
    row = spark.sql(change_counts_sql(job.engine, job.spec, job.types,
                                      collapsed_view=job.collapsed_view,
                                      as_of=job.base.snapshot_id)).collect()[0]
    return {k: int(v) for k, v in row.asDict().items()}
