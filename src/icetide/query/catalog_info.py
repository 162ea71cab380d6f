"""Catalog metadata for the ``tables`` and ``describe`` commands, read without a JVM."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from icetide.errors import TableError
from icetide.runtime.catalogs import Identifier, ReadCatalog

log = logging.getLogger(__name__)


def all_tables(catalog: ReadCatalog) -> list[Identifier]:
    """Every table of every (nested) namespace, sorted."""
    found: set[Identifier] = set()
    seen: set[Identifier] = set()
    pending: list[Identifier] = list(catalog.list_namespaces())
    while pending:
        namespace = tuple(pending.pop())
        if namespace in seen:
            continue
        seen.add(namespace)
        found.update(tuple(t) for t in catalog.list_tables(namespace))
        children = (tuple(n) for n in catalog.list_namespaces(namespace))
        pending.extend(n for n in children if n != namespace)
    return sorted(found)


def parse_identifier(text: str, catalog_name: str) -> Identifier:
    """``ns.table``, ``lake.ns.table`` or ```ns`.`table``` → ``("ns", "table")``."""
    parts = tuple(p.strip().strip("`\"") for p in text.split("."))
    if len(parts) >= 3 and parts[0] == catalog_name:
        parts = parts[1:]
    if len(parts) < 2 or not all(parts):
        raise TableError(
            f"table name {text!r} is not namespace-qualified: write it as 'namespace.table' "
            f"(list them with `icetide tables`)"
        )
    return parts


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class TableSummary:
    """One line of ``icetide tables``."""

    name: str
    rows: int | None  # None: unknown (equality deletes, or no snapshot summary)
    snapshots: int
    last_commit: str | None  # ISO-8601 UTC
    format_version: int
    #: ``iceberg``, or ``hudi merge_on_read`` / ``hudi copy_on_write``
    format: str = "iceberg"


def live_rows(snapshot: Snapshot | None) -> int | None:
    """Rows visible in ``snapshot``: records minus position deletes (exact without
    equality deletes; ``None`` when those exist or the summary lacks the totals)."""
    if snapshot is None:
        return 0
    summary = snapshot.summary
    if summary is None:
        return None
    try:
        records = int(summary["total-records"] or "")
        pos = int(summary["total-position-deletes"] or "0")
        eq = int(summary["total-equality-deletes"] or "0")
    except ValueError:
        return None
    return None if eq else records - pos


def summarize(name: str, table: Table) -> TableSummary:
    """The ``tables`` line of one table."""
    meta = table.metadata
    current = table.current_snapshot()
    return TableSummary(
        name=name,
        rows=live_rows(current),
        snapshots=len(meta.snapshots),
        last_commit=iso_ms(current.timestamp_ms if current else meta.last_updated_ms),
        format_version=int(meta.format_version),
    )


def table_summaries(catalog: ReadCatalog) -> list[TableSummary]:
    """Summaries of all tables of ``catalog``."""
    return [summarize(".".join(i), catalog.load_table(i)) for i in all_tables(catalog)]


class SnapshotInfo(TypedDict):
    snapshot_id: int
    parent_id: int | None
    committed_at: str | None
    operation: str | None
    summary: dict[str, str]


class ColumnInfo(TypedDict):
    id: int
    name: str
    type: str
    required: bool
    doc: str | None


class PartitionFieldInfo(TypedDict):
    name: str
    transform: str
    source: str | None


class RefInfo(TypedDict):
    """A tag or branch as ``describe`` shows it."""

    name: str
    type: str
    snapshot_id: int
    #: how long after its snapshot the ref expires (a tag: its snapshot too); None: never
    max_ref_age_ms: int | None


class TimeTravelInfo(TypedDict):
    """How far back ``VERSION AS OF`` / ``TIMESTAMP AS OF`` reach: the oldest snapshot
    the table keeps (maintenance expires older ones, but those a tag names)."""

    oldest_snapshot_id: int | None
    oldest_committed_at: str | None
    snapshots_kept: int


class TableDescription(TypedDict):
    """What ``icetide describe`` shows (JSON-friendly)."""

    table: str
    format: str  # iceberg | hudi merge_on_read | hudi copy_on_write
    location: str
    metadata_location: str
    format_version: int
    current_snapshot_id: int | None
    rows: int | None
    schema: list[ColumnInfo]
    partition_spec: list[PartitionFieldInfo]
    sort_order: list[str]
    identifier_fields: list[str]
    properties: dict[str, str]
    snapshots: list[SnapshotInfo]
    refs: list[RefInfo]
    time_travel: TimeTravelInfo


def _snapshot_info(snap: Snapshot) -> SnapshotInfo:
    summary = snap.summary
    return {
        "snapshot_id": snap.snapshot_id,
        "parent_id": snap.parent_snapshot_id,
        "committed_at": iso_ms(snap.timestamp_ms),
        "operation": summary.operation.value if summary is not None else None,
        "summary": dict(summary.model_dump()) if summary is not None else {},
    }


def _schema_info(table: Table) -> list[ColumnInfo]:
    return [
        {
            "id": f.field_id,
            "name": f.name,
            "type": str(f.field_type),
            "required": f.required,
            "doc": f.doc,
        }
        for f in table.schema().fields
    ]


def _partition_info(table: Table) -> list[PartitionFieldInfo]:
    schema = table.schema()
    return [
        {
            "name": f.name,
            "transform": str(f.transform),
            "source": schema.find_column_name(f.source_id),
        }
        for f in table.spec().fields
    ]


def _sort_info(table: Table) -> list[str]:
    """The sort order (``cluster_by``) by column name: ``uid ASC NULLS FIRST``; a
    transform as Iceberg writes it: ``bucket[16](uid) DESC NULLS LAST``."""
    schema = table.schema()
    shown = []
    for f in table.sort_order().fields:
        column = schema.find_column_name(f.source_id) or str(f.source_id)
        term = column if str(f.transform) == "identity" else f"{f.transform}({column})"
        shown.append(f"{term} {f.direction} {f.null_order}")
    return shown


def _refs_info(table: Table) -> list[RefInfo]:
    """Tags and branches, ``main`` left out (it is the current snapshot)."""
    return [{"name": name, "type": ref.snapshot_ref_type.value, "snapshot_id": ref.snapshot_id,
             "max_ref_age_ms": ref.max_ref_age_ms}
            for name, ref in sorted(table.metadata.refs.items()) if name != "main"]


def _time_travel_info(table: Table) -> TimeTravelInfo:
    kept = table.metadata.snapshots
    oldest = min(kept, key=lambda s: s.timestamp_ms) if kept else None
    return {"oldest_snapshot_id": oldest.snapshot_id if oldest else None,
            "oldest_committed_at": iso_ms(oldest.timestamp_ms) if oldest else None,
            "snapshots_kept": len(kept)}


def describe(name: Identifier, table: Table, snapshots: int = 5) -> TableDescription:
    """Everything ``icetide describe`` shows, as JSON-friendly data (newest snapshots first)."""
    meta = table.metadata
    recent = sorted(meta.snapshots, key=lambda s: s.timestamp_ms, reverse=True)[:snapshots]
    current = table.current_snapshot()
    return {
        "table": ".".join(name),
        "format": "iceberg",
        "location": meta.location,
        "metadata_location": table.metadata_location,
        "format_version": int(meta.format_version),
        "current_snapshot_id": current.snapshot_id if current else None,
        "rows": live_rows(current),
        "schema": _schema_info(table),
        "partition_spec": _partition_info(table),
        "sort_order": _sort_info(table),
        "identifier_fields": sorted(table.schema().identifier_field_names()),
        "properties": dict(sorted(table.properties.items())),
        "snapshots": [_snapshot_info(s) for s in recent],
        "refs": _refs_info(table),
        "time_travel": _time_travel_info(table),
    }


def load(catalog: ReadCatalog, text: str) -> tuple[Identifier, Table]:
    """Parse ``text`` and load that table, with a helpful error when it does not exist."""
    ident = parse_identifier(text, catalog.name)
    try:
        return ident, catalog.load_table(ident)
    except (NoSuchTableError, NoSuchNamespaceError) as exc:
        raise TableError(
            f"table {'.'.join(ident)!r} does not exist in catalog {catalog.name!r}: "
            "check the name with `icetide tables`"
        ) from exc
