"""A Hudi table's timeline read from its files, without a JVM (``icetide status``,
``tables``, ``describe``, the dashboard, the lag of a Hudi source).

Hudi keeps its history as files under ``<base>/.hoodie/timeline/`` (table version 8 and
later; ``<base>/.hoodie/`` before): an instant is requested (``<t>.<action>.requested``),
in flight (``<t>.<action>.inflight``) and, once its writer finished, completed
(``<t>_<completion time>.<action>``, whose content is the commit's metadata: an Avro
``HoodieCommitMetadata`` since table version 8, JSON before). A commit a writer died in
never gets its completed file, so everything read here is what Hudi's readers see.
icetide's marker is in a completed commit's *extra metadata* (:mod:`icetide.lake.hudi`).

Instant times are ``yyyyMMddHHmmssSSS`` in the table's time zone
(``hoodie.table.timeline.timezone``: ``LOCAL``, Hudi's default, or ``UTC``).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from icetide.errors import TableError
from icetide.model.markers import Marker

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

    from icetide.config import Settings

log = logging.getLogger(__name__)

#: The extra-metadata key holding icetide's marker (as :data:`icetide.lake.hudi.MARKER_KEY`).
MARKER_KEY = "icetide.marker"
#: Actions whose completed instants wrote data: a merge-on-read delta commit, a
#: copy-on-write commit (or a compaction on merge-on-read), a clustering/replace.
WRITE_ACTIONS = ("deltacommit", "commit", "replacecommit")
#: Operations that rewrote files without changing rows (table services).
SERVICE_OPERATIONS = ("COMPACT", "LOG_COMPACT", "CLUSTER")


@dataclass(frozen=True)
class Instant:
    """One completed instant: requested time, completion time, action."""

    requested: str
    completed: str
    action: str
    file: str  # its file name in the timeline folder


def instant_ms(instant: str, zone: str = "LOCAL") -> int:
    """``yyyyMMddHHmmssSSS`` (the table's time zone) → epoch milliseconds."""
    naive = datetime.strptime(instant[:17].ljust(17, "0"), "%Y%m%d%H%M%S%f")
    aware = naive.replace(tzinfo=UTC) if zone.upper() == "UTC" else naive.astimezone()
    return int(aware.timestamp() * 1000)


def ms_instant(ms: int, zone: str = "LOCAL") -> str:
    """Epoch milliseconds → ``yyyyMMddHHmmssSSS`` in the table's time zone."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    local = moment if zone.upper() == "UTC" else moment.astimezone()
    return local.strftime("%Y%m%d%H%M%S") + f"{local.microsecond // 1000:03d}"


def open_location(location: str, settings: Settings | None = None) -> tuple[FileSystem, str]:
    """A pyarrow file system and the path in it for ``location`` (local, ``file:``, or
    ``s3``/``s3a`` with the settings' S3 endpoint and the environment's credentials)."""
    from pyarrow.fs import LocalFileSystem

    from icetide.runtime.s3 import filesystem, on_s3

    parts = urlsplit(location)
    if on_s3(location):
        if settings is None:
            raise TableError(f"reading {location} needs the lake's S3 settings")
        return filesystem(settings), f"{parts.netloc}{parts.path}".rstrip("/")
    if parts.scheme not in ("", "file"):
        raise TableError(f"a Hudi table at {location}: icetide reads Hudi timelines on the "
                         "local file system or S3 only")
    return LocalFileSystem(), parts.path.rstrip("/")


class HudiTimeline:
    """The completed instants of the Hudi table at ``location``, newest last."""

    def __init__(self, location: str, settings: Settings | None = None) -> None:
        self.location = location
        self.fs, self.path = open_location(location, settings)
        self._properties: dict[str, str] | None = None
        self._meta: dict[str, dict[str, Any]] = {}

    @property
    def properties(self) -> dict[str, str]:
        """``.hoodie/hoodie.properties`` (table name, type, version, keys, time zone)."""
        if self._properties is None:
            raw = self._read(f"{self.path}/.hoodie/hoodie.properties")
            self._properties = parse_properties(raw)
        return self._properties

    @property
    def zone(self) -> str:
        return self.properties.get("hoodie.table.timeline.timezone", "LOCAL")

    @property
    def table_type(self) -> str:
        return self.properties.get("hoodie.table.type", "COPY_ON_WRITE")

    def _folder(self) -> str:
        layout = int(self.properties.get("hoodie.timeline.layout.version", "1"))
        sub = self.properties.get("hoodie.timeline.path", "timeline")
        return f"{self.path}/.hoodie/{sub}" if layout >= 2 else f"{self.path}/.hoodie"

    def _read(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(path) as stream:
                return bytes(stream.read())
        except FileNotFoundError as exc:
            raise TableError(f"no Hudi table at {self.location} ({path} is missing)") from exc

    def instants(self) -> list[Instant]:
        """Completed instants, in completion order."""
        from pyarrow.fs import FileSelector

        found = []
        for info in self.fs.get_file_info(FileSelector(self._folder())):
            name = info.base_name
            if name.startswith(".") or not info.is_file:
                continue
            stem, _, action = name.partition(".")
            if not action or "." in action:  # .requested / .inflight: not completed
                continue
            requested, _, completed = stem.partition("_")
            found.append(Instant(requested, completed or requested, action, name))
        return sorted(found, key=lambda i: (i.completed, i.requested))

    def writes(self) -> list[Instant]:
        """Completed instants that wrote data (commits, delta commits, replaces)."""
        return [i for i in self.instants() if i.action in WRITE_ACTIONS]

    def metadata(self, instant: Instant) -> dict[str, Any]:
        """The commit metadata of a completed write (Avro since table version 8, else JSON)."""
        if instant.file not in self._meta:
            self._meta[instant.file] = decode_metadata(
                self._read(f"{self._folder()}/{instant.file}"))
        return self._meta[instant.file]

    def committed_ms(self, instant: Instant) -> int:
        return instant_ms(instant.completed, self.zone)

    def markers(self) -> Iterator[tuple[Instant, Marker]]:
        """``(instant, marker)`` of the completed writes carrying one, newest first."""
        for instant in reversed(self.writes()):
            marker = marker_of(self.metadata(instant))
            if marker is not None:
                yield instant, marker


def parse_properties(raw: bytes) -> dict[str, str]:
    """A Java ``.properties`` file as Hudi writes it (``key=value`` lines, ``#`` comments)."""
    found = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, _, value = line.partition("=")
            found[key.strip()] = value.strip().replace("\\:", ":").replace("\\=", "=")
    return found


def decode_metadata(raw: bytes) -> dict[str, Any]:
    """One commit's metadata: an Avro container of one record, or (table version 6) JSON;
    an empty file (a rollback or clean plan) is ``{}``."""
    if not raw.strip():
        return {}
    if raw.lstrip().startswith(b"{"):
        found: dict[str, Any] = json.loads(raw)
        return found
    import fastavro

    for record in fastavro.reader(io.BytesIO(raw)):
        return dict(record) if isinstance(record, Mapping) else {}
    return {}


def marker_of(metadata: Mapping[str, Any]) -> Marker | None:
    """icetide's marker in a commit's extra metadata, if any."""
    text = (metadata.get("extraMetadata") or {}).get(MARKER_KEY)
    return Marker.from_summary(json.loads(text)) if text else None


def write_totals(metadata: Mapping[str, Any]) -> dict[str, int]:
    """A commit's write statistics summed over its files: records written, inserted,
    updated and deleted, files and bytes."""
    keys = {"numWrites": "written", "numInserts": "inserted", "numUpdateWrites": "updated",
            "numDeletes": "deleted", "totalWriteBytes": "bytes"}
    totals = dict.fromkeys([*keys.values(), "files"], 0)
    for stats in (metadata.get("partitionToWriteStats") or {}).values():
        for stat in stats or ():
            totals["files"] += 1
            for key, name in keys.items():
                totals[name] += int(stat.get(key) or 0)
    return totals


def pending_changes(timeline: HudiTimeline, after: str | None) -> tuple[int, int]:
    """Commits completed after ``after`` (a completion time; ``None``: all) and the rows
    they inserted, updated or deleted (table services change none)."""
    commits = rows = 0
    for instant in timeline.writes():
        if after is not None and instant.completed <= after:
            continue
        commits += 1
        meta = timeline.metadata(instant)
        if str(meta.get("operationType") or "").upper() not in SERVICE_OPERATIONS:
            totals = write_totals(meta)
            rows += totals["inserted"] + totals["updated"] + totals["deleted"]
    return commits, rows
