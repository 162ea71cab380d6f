"""Read what maintenance decides on: a table's numbers and the flows' newest markers."""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from icetide.config import MaintenanceConfig
from icetide.lake.commit import MAX_ANCESTORS, read_metadata
from icetide.lake.metadata import local_path, metadata_of
from icetide.maintainer.report import TableStats
from icetide.model.keys import MarkerKeys
from icetide.model.markers import Marker
from icetide.tables.maintenance_policy import FlowMark, full_size_bytes, small_file_bytes
from icetide.tables.sql import quote_ident

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def _int(summary: Mapping[str, str], key: str) -> int:
    value = summary.get(key)
    return int(value) if value is not None else 0


def table_stats(spark: SparkSession, table: JavaObject) -> TableStats:
    """Numbers of ``table`` (a Java Iceberg ``Table``) from its current snapshot."""
    meta = metadata_of(spark, table)
    snap, snapshots = meta.current, len(meta.snapshots)
    disk = disk_bytes(meta.location or str(table.location()))
    if snap is None:
        return TableStats(snapshots=snapshots, disk_bytes=disk)
    summary = snap.summary
    return TableStats(
        data_files=_int(summary, "total-data-files"),
        delete_files=_int(summary, "total-delete-files"),
        records=_int(summary, "total-records"),
        position_deletes=_int(summary, "total-position-deletes"),
        bytes=_int(summary, "total-files-size"),
        snapshots=snapshots,
        manifests=int(table.currentSnapshot().allManifests(table.io()).size()),
        disk_bytes=disk,
    )


def medium_bytes(spark: SparkSession, ident: str, table: JavaObject, policy: MaintenanceConfig
                 ) -> list[int]:
    """Per partition of ``ident`` (``table``: its Java ``Table``), the bytes of its
    *medium* data files: neither small nor full-sized under ``policy`` (one query of its
    ``files`` metadata table)."""
    files = ".".join(quote_ident(part) for part in [*ident.split("."), "files"])
    group = "" if table.spec().isUnpartitioned() else " GROUP BY partition"
    rows = spark.sql(f"SELECT sum(file_size_in_bytes) AS b FROM {files} WHERE content = 0 "
                     f"AND file_size_in_bytes >= {small_file_bytes(policy)} AND "
                     f"file_size_in_bytes < {full_size_bytes(policy)}{group}").collect()
    return [int(row["b"]) for row in rows if row["b"] is not None]


def disk_bytes(location: str) -> int | None:
    """Bytes of every file under a local table location (``None`` for remote stores)."""
    root = local_path(location)
    if root is None:
        return None
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += (Path(dirpath) / name).stat().st_size
            except OSError:  # deleted while walking
                continue
    return total


def catalog_tables(spark: SparkSession, catalog: str) -> list[str]:
    """Every table of ``catalog`` as ``catalog.db.table``."""
    out: list[str] = []
    for ns in spark.sql(f"SHOW NAMESPACES IN {quote_ident(catalog)}").collect():
        db = _unquoted(str(ns[0]))
        if db.startswith("."):  # a Hadoop warehouse lists every folder, e.g. .icetide-leases
            continue
        rows = spark.sql(f"SHOW TABLES IN {quote_ident(catalog)}.{quote_ident(db)}").collect()
        out.extend(f"{catalog}.{db}.{row['tableName']}" for row in rows
                   if not row["isTemporary"])
    return sorted(out)


def _unquoted(name: str) -> str:
    """A namespace name as SHOW NAMESPACES prints it (back-quoted when it needs it)."""
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def newest_marks(spark: SparkSession, ident: str) -> list[FlowMark]:
    """Each flow's newest marker among ``ident``'s snapshot ancestors."""
    marks: dict[str, FlowMark] = {}
    for snap in itertools.islice(read_metadata(spark, ident).ancestors(), MAX_ANCESTORS):
        flow = snap.summary.get(MarkerKeys.FLOW)
        if flow is not None and flow not in marks:
            marker = Marker.from_summary(snap.summary)
            positions = () if marker is None else (marker.start, marker.end)
            marks[flow] = FlowMark(ident, flow, snap.snapshot_id, snap.timestamp_ms, positions)
    return list(marks.values())


def all_marks(spark: SparkSession, idents: list[str]) -> list[FlowMark]:
    """The newest marker of every flow on every table of ``idents``."""
    out: list[FlowMark] = []
    for ident in idents:
        try:
            out.extend(newest_marks(spark, ident))
        except Exception as exc:  # a table dropped meanwhile, a view: no markers
            log.debug("no markers read from %s: %s", ident, exc)
    return out
