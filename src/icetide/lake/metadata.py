"""A table's metadata (snapshots, their summaries, properties) in one py4j call.

Walking a Java ``Table``'s snapshots over py4j costs about 35 round trips per snapshot,
and turning a summary ``java.util.Map`` into a ``dict`` ends each iteration with a Java
``NoSuchElementException`` that pyspark's error handler inspects with a dozen more
calls. Markers, positions and maintenance read summaries of many snapshots on every
batch and every poll, so :func:`table_metadata` asks Iceberg for the metadata JSON once
(``TableMetadataParser.toJson``, the same document as the table's ``metadata.json``)
and parses it here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot as the metadata JSON describes it."""

    snapshot_id: int
    parent_id: int | None
    sequence_number: int
    timestamp_ms: int
    operation: str | None
    #: The summary without ``operation`` (as Java's ``Snapshot.summary()``).
    summary: Mapping[str, str]


@dataclass(frozen=True)
class TableMetadata:
    """The parts of a table's metadata the lake reads."""

    current_snapshot_id: int | None
    snapshots: Mapping[int, SnapshotInfo] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    location: str = ""

    @property
    def current(self) -> SnapshotInfo | None:
        """The current snapshot of the main branch (``None`` for an empty table)."""
        if self.current_snapshot_id is None:
            return None
        return self.snapshots.get(self.current_snapshot_id)

    def ancestors(self, start: int | None = None) -> Iterator[SnapshotInfo]:
        """``start`` (default: the current snapshot), then its parents, newest first,
        until a parent is no longer in the table (expired)."""
        snap = self.current if start is None else self.snapshots.get(start)
        while snap is not None:
            yield snap
            snap = None if snap.parent_id is None else self.snapshots.get(snap.parent_id)


def _snapshot(raw: Mapping[str, Any]) -> SnapshotInfo:
    summary = {str(k): str(v) for k, v in (raw.get("summary") or {}).items()}
    operation = summary.pop("operation", None)
    parent = raw.get("parent-snapshot-id")
    return SnapshotInfo(
        snapshot_id=int(raw["snapshot-id"]),
        parent_id=None if parent is None else int(parent),
        sequence_number=int(raw.get("sequence-number", 0)),
        timestamp_ms=int(raw.get("timestamp-ms", 0)),
        operation=operation,
        summary=summary,
    )


def parse_metadata(text: str | bytes) -> TableMetadata:
    """A ``metadata.json`` document → :class:`TableMetadata`."""
    raw = orjson.loads(text)
    current = raw.get("current-snapshot-id")
    snapshots = {s.snapshot_id: s for s in map(_snapshot, raw.get("snapshots") or [])}
    return TableMetadata(
        current_snapshot_id=None if current is None or int(current) < 0 else int(current),
        snapshots=snapshots,
        properties={str(k): str(v) for k, v in (raw.get("properties") or {}).items()},
        location=str(raw.get("location", "")),
    )


def metadata_of(spark: SparkSession, table: Any) -> TableMetadata:
    """The metadata of ``table`` (a Java Iceberg ``Table``, as loaded) in one call."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    current = table.operations().current()
    return parse_metadata(str(jvm.org.apache.iceberg.TableMetadataParser.toJson(current)))
