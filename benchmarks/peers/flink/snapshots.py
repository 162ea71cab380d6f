"""What each commit of a table added: row images by snapshot, read from its data files.

The GROUP BY and CDC tables are upserted: Flink writes equality deletes, which pyiceberg
cannot apply, and icetide rewrites files in place. Neither matters for "when did this
value become visible": every change writes its new row image into a data file added by
the commit that makes it visible, so the first commit whose added data files hold the
image is that commit. Reading only added data files also costs a few small Parquet reads
per commit, not a scan of the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table


@dataclass(frozen=True)
class Commit:
    """One snapshot: when it was committed, how many rows its data files added."""

    snapshot_id: int
    committed_ms: int
    added_records: int


def commits_since(table: Table, since_ms: int = 0) -> list[Commit]:
    """The table's snapshots committed at or after ``since_ms``, oldest first."""
    found = []
    for snap in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0):
        if snap.timestamp_ms < since_ms:
            continue
        summary = snap.summary.additional_properties if snap.summary is not None else {}
        found.append(Commit(snap.snapshot_id, snap.timestamp_ms,
                            int(summary.get("added-records", 0))))
    return found


def added_images(table: Table, columns: Sequence[str], since_ms: int = 0,
                 skip: Iterable[int] = (), where: Any = None) -> Iterator[tuple[int, pa.Table]]:
    """Per snapshot of this version of ``table`` committed from ``since_ms`` on (oldest
    first; ``skip``: snapshot ids already read), the rows of each data file it added:
    ``(commit ms, rows)``; ``where``: a pyarrow filter (``[("userid", "=", "probe")]``)."""
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus

    done = set(skip)
    for snap in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0):
        if snap.timestamp_ms < since_ms or snap.snapshot_id in done:
            continue
        for manifest in snap.manifests(table.io):
            if (manifest.added_snapshot_id != snap.snapshot_id
                    or manifest.content != ManifestContent.DATA):
                continue
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                if (entry.status != ManifestEntryStatus.ADDED
                        or entry.data_file.content != DataFileContent.DATA):
                    continue
                path = "/" + entry.data_file.file_path.removeprefix("file:").lstrip("/")
                yield snap.timestamp_ms, pq.read_table(path, columns=list(columns),
                                                       filters=where)


def first_commits(images: Iterable[tuple[int, Iterable[Any]]]) -> dict[Any, int]:
    """Per value, the commit time of the first image holding it (images oldest first)."""
    seen: dict[Any, int] = {}
    for committed_ms, values in images:
        for value in values:
            seen.setdefault(value, committed_ms)
    return seen


def fold_max(best: dict[str, int], keys: Iterable[str], counts: Iterable[int]) -> None:
    """Keep per key the highest count seen: a count only grows, so the highest image of
    a key is its current value."""
    for key, count in zip(keys, counts, strict=True):
        if count > best.get(key, -1):
            best[key] = count


def latencies(produced_ms: Sequence[int], keys: Sequence[Any],
              visible: Mapping[Any, int]) -> list[float | None]:
    """Seconds from each probe's produce time to the commit that made its key visible
    (None: not visible)."""
    return [None if k not in visible else (visible[k] - p) / 1000
            for p, k in zip(produced_ms, keys, strict=True)]


def state_latencies(produced_ms: Sequence[int], keys: Sequence[Any],
                    visible: Mapping[Any, int]) -> list[float | None]:
    """As :func:`latencies`, for successive values of one row: a value overwritten
    before any commit held it is never written by an engine that folds a key's changes
    per batch, yet the first commit holding a later value holds a state past it, so
    each probe counts from the earliest commit of its value or of any later one."""
    out: list[float | None] = []
    earliest: int | None = None
    for produced, key in zip(reversed(produced_ms), reversed(keys), strict=True):
        seen = visible.get(key)
        if seen is not None and (earliest is None or seen < earliest):
            earliest = seen
        out.append(None if earliest is None else (earliest - produced) / 1000)
    return out[::-1]
