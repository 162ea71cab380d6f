"""A table's metadata (snapshots, their summaries, properties) in one py4j call.

Walking a Java ``Table``'s snapshots over py4j costs about 35 round trips per snapshot,
and turning a summary ``java.util.Map`` into a ``dict`` ends each iteration with a Java
``NoSuchElementException`` that pyspark's error handler inspects with a dozen more
calls. Markers, positions and maintenance read summaries of many snapshots on every
batch and every poll, so :func:`metadata_of` reads the table's current ``metadata.json``
once and parses it here.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import orjson

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
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
    #: the table's refs (tags and branches, ``main`` too) → the snapshot each names
    refs: Mapping[str, int] = field(default_factory=dict)

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
        refs={str(k): int(v["snapshot-id"]) for k, v in (raw.get("refs") or {}).items()},
    )


#: Characters fetched per py4j call. py4j answers a call in one line, and one longer than
#: its 8 KiB write buffer leaves in two TCP segments: the second waits for the first's
#: delayed ACK, 40 ms per call (measured: 0.3 ms at 4.6 KB, 44 ms at 8.5 KB and up).
#: py4j escapes backslashes, which JSON inside summaries is full of, so stay well under.
CHUNK_CHARS = 3_000


def metadata_of(spark: SparkSession, table: JavaObject) -> TableMetadata:
    """The metadata of ``table`` (a Java Iceberg ``Table``, as loaded).

    The current ``metadata.json`` is read as a file when it is local (a table refresh
    just read the same file), else serialized by Iceberg and fetched in small pieces.
    """
    current = table.operations().current()
    location = str(current.metadataFileLocation() or "")
    version = (location, str(current.uuid()))
    known = _LATEST.get(version)
    if known is not None:
        return known
    parsed = _parse(spark, current, location)
    if location:
        _LATEST.put(version, parsed)
    return parsed


def _parse(spark: SparkSession, current: JavaObject, location: str) -> TableMetadata:
    local = local_path(location) if location else None
    if local is not None:
        try:
            return parse_metadata(_read(local))
        except FileNotFoundError:  # replaced meanwhile: what the JVM holds is current
            pass
    return parse_metadata(_fetch_json(spark, current))


#: A metadata version: its file's location and the table's UUID.
Version = tuple[str, str]


class _LatestPerTable:
    """The newest parsed ``metadata.json`` of each table, by version.

    A table never rewrites a metadata file (every commit writes a new one), so a version
    read before parses to the same metadata: a flow reads its target's and its inputs'
    markers several times per batch and between commits, and only the first read of a
    version parses it. The table's UUID is part of the version: a table dropped and
    created again at the same place restarts a Hadoop catalog's ``v1.metadata.json``.
    One entry per metadata folder (a table) bounds the memory."""

    def __init__(self) -> None:
        self._by_folder: dict[str, tuple[Version, TableMetadata]] = {}
        self._lock = threading.Lock()

    def get(self, version: Version) -> TableMetadata | None:
        with self._lock:
            entry = self._by_folder.get(version[0].rsplit("/", 1)[0])
        return entry[1] if entry is not None and entry[0] == version else None

    def put(self, version: Version, parsed: TableMetadata) -> None:
        with self._lock:
            self._by_folder[version[0].rsplit("/", 1)[0]] = (version, parsed)


_LATEST = _LatestPerTable()


def local_path(location: str) -> Path | None:
    """The local path of a table or file ``location`` (``None`` for a remote store)."""
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        return None
    return Path(parsed.path)


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _fetch_json(spark: SparkSession, current: JavaObject, chunk: int = CHUNK_CHARS) -> str:
    """``TableMetadataParser.toJson(current)``, fetched ``chunk`` characters a call."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    writer = jvm.java.io.StringWriter()
    generator = jvm.org.apache.iceberg.util.JsonUtil.factory().createGenerator(writer)
    jvm.org.apache.iceberg.TableMetadataParser.toJson(current, generator)
    generator.flush()
    text = writer.getBuffer()  # a Java StringBuffer: stays in the JVM
    size = int(text.length())
    return "".join(str(text.substring(i, min(i + chunk, size)))
                   for i in range(0, size, chunk))
