"""What one maintenance pass over one table did (or, dry, would do)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Generic, TypeVar


@dataclass(frozen=True)
class TableStats:
    """A table's current snapshot in numbers (from its summary; no file listing)."""

    data_files: int = 0
    delete_files: int = 0
    records: int = 0
    position_deletes: int = 0
    bytes: int = 0
    snapshots: int = 0
    manifests: int = 0
    disk_bytes: int | None = None  # every file under the table's location (local lakes)

    @property
    def avg_file_bytes(self) -> int:
        return self.bytes // self.data_files if self.data_files else 0


@dataclass(frozen=True)
class HudiStats:
    """A Hudi table's files and active timeline in numbers (one listing, no JVM)."""

    file_groups: int = 0
    base_files: int = 0  # every version on disk
    log_files: int = 0  # every version on disk (CDC logs not counted)
    #: log files newer than their file group's newest base file: what compaction merges
    pending_log_files: int = 0
    commits: int = 0  # completed writes in the active timeline (Hudi's commits timeline)
    disk_bytes: int | None = None


S = TypeVar("S", TableStats, HudiStats)


@dataclass
class _Pass(Generic[S]):
    """What every pass reports: the steps in order, each with its counts."""

    table: str
    dry_run: bool
    before: S
    after: S | None = None
    actions: dict[str, dict[str, object]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    #: Wall seconds of each step, in order (a step with nothing to do included).
    step_seconds: dict[str, float] = field(default_factory=dict)
    format: str = "iceberg"

    def _done(self) -> str:
        """The steps that did something with their seconds, and those that yielded."""
        done = ", ".join(f"{name} {self.step_seconds.get(name, 0.0):.1f}s"
                         for name in self.actions) or "nothing to do"
        return done + (f"; yielded: {', '.join(self.skipped)}" if self.skipped else "")

    @property
    def bytes_freed(self) -> int | None:
        """Bytes on disk the pass removed (``None``: not known, e.g. a remote store)."""
        before = self.before.disk_bytes
        after = None if self.after is None else self.after.disk_bytes
        return None if before is None or after is None else max(0, before - after)

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["bytes_freed"] = self.bytes_freed
        return out


@dataclass
class MaintenanceReport(_Pass[TableStats]):
    """One pass over an Iceberg table: ``actions`` in order (``compaction``, ``deletes``,
    ``manifests``, ``expiry``, ``orphans``, ``metadata``), each with its counts."""

    def summary(self) -> str:
        """One line: the steps that did something with their seconds, files before → after."""
        after = self.after.data_files if self.after is not None else "?"
        snaps = self.after.snapshots if self.after is not None else "?"
        return (f"{self.table} in {self.seconds:.1f}s ({self._done()}): data files "
                f"{self.before.data_files} → {after}, snapshots {self.before.snapshots} → {snaps}")


@dataclass
class HudiMaintenanceReport(_Pass[HudiStats]):
    """One pass over a Hudi table: ``actions`` in order (``compaction``, ``clean``,
    ``archive``), each with its counts."""

    format: str = "hudi"

    def summary(self) -> str:
        """One line: the steps that did something, log files and commits before → after."""
        logs = self.after.pending_log_files if self.after is not None else "?"
        commits = self.after.commits if self.after is not None else "?"
        return (f"{self.table} (hudi) in {self.seconds:.1f}s ({self._done()}): log files to "
                f"compact {self.before.pending_log_files} → {logs}, active commits "
                f"{self.before.commits} → {commits}")


#: What a pass over any table reports.
AnyReport = MaintenanceReport | HudiMaintenanceReport
