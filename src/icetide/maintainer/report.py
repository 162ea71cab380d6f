"""What one maintenance pass over one table did (or, dry, would do), as typed values.

Each step has its own frozen result (:class:`Compaction`, :class:`DeleteRewrite`,
:class:`ManifestRewrite`, :class:`Expiry`, :class:`OrphanSweep`); a step that rewrote
files holds Iceberg's counts, typed by the procedure's column names
(:class:`RewriteCounts`), and ``None`` there in a dry run. ``to_dict`` gives the
JSON of ``icetide maintain --format json``: each step's fields with Iceberg's counts
beside them, under the step's name. A Hudi table's pass reports the same way
(:class:`HudiMaintenanceReport`: :class:`HudiCompaction`, :class:`HudiClean`,
:class:`HudiArchive`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar, cast

from icetide.tables.maintenance_policy import Strategy

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


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


# --------------------------------------------------------------------------- Iceberg's counts
@dataclass(frozen=True)
class RewriteCounts:
    """The result row of one of Iceberg's rewrite procedures, by its column names; a
    column the procedure does not return is ``None``."""

    #: ``rewrite_data_files`` (with ``rewritten_bytes_count``)
    rewritten_data_files_count: int | None = None
    added_data_files_count: int | None = None
    failed_data_files_count: int | None = None
    removed_delete_files_count: int | None = None
    #: ``rewrite_position_delete_files`` (with both bytes counts)
    rewritten_delete_files_count: int | None = None
    added_delete_files_count: int | None = None
    #: bytes read by a data or delete file rewrite; bytes a delete file rewrite wrote
    rewritten_bytes_count: int | None = None
    added_bytes_count: int | None = None
    #: ``rewrite_manifests``
    rewritten_manifests_count: int | None = None
    added_manifests_count: int | None = None

    @classmethod
    def of_row(cls, row: Mapping[str, object]) -> RewriteCounts:
        """The counts of a result row (a column this class does not name is left out)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: int(str(v)) for k, v in row.items() if k in names and v is not None})

    def to_dict(self) -> dict[str, int]:
        """The columns the procedure returned."""
        return {k: v for k, v in asdict(self).items() if v is not None}


# --------------------------------------------------------------------------- the steps
@dataclass(frozen=True)
class Compaction:
    """``rewrite_data_files``: the plan, and what it rewrote (``done``; dry run: ``None``)."""

    strategy: Strategy
    sort_order: str | None  # sort's order (None: the table's own, or binpack)
    files: Literal["all below full size", "small only"]
    files_before: int
    deletes_applied: bool  # deletes passed delete_ratio: rewritten files drop deleted rows
    done: RewriteCounts | None = None


@dataclass(frozen=True)
class DeleteRewrite:
    """``rewrite_position_delete_files`` over ``delete_files_before`` delete files."""

    delete_files_before: int
    done: RewriteCounts | None = None


@dataclass(frozen=True)
class ManifestRewrite:
    """``rewrite_manifests`` over ``manifests_before`` manifests."""

    manifests_before: int
    done: RewriteCounts | None = None


@dataclass(frozen=True)
class Expiry:
    """``snapshots`` expired (dry: expirable) before ``older_than_ms``, which was lowered
    to keep the ``kept_for_consumers`` snapshots flows still need."""

    older_than_ms: int
    snapshots: int
    kept_for_consumers: int


@dataclass(frozen=True)
class OrphanSweep:
    """``orphan_files`` deleted (dry: found) older than ``older_than_ms``; a few paths."""

    orphan_files: int
    sample: tuple[str, ...]
    older_than_ms: int


Step = Compaction | DeleteRewrite | ManifestRewrite | Expiry | OrphanSweep


def step_dict(step: DataclassInstance) -> dict[str, object]:
    """A step as JSON: its fields, Iceberg's counts (``done``) beside them."""
    out = {f.name: getattr(step, f.name) for f in fields(step) if f.name != "done"}
    done = getattr(step, "done", None)
    return {**out, **(done.to_dict() if done is not None else {})}


class _StepSet:
    """The results of a pass's steps (a dataclass of one optional field per step, in
    pass order; ``None``: nothing to do, or it yielded)."""

    def done(self) -> tuple[str, ...]:
        """The names of the steps that did something (dry: would), in pass order."""
        return tuple(f.name for f in fields(cast("DataclassInstance", self))
                     if getattr(self, f.name) is not None)

    def to_dict(self) -> dict[str, dict[str, object]]:
        return {name: step_dict(getattr(self, name)) for name in self.done()}


@dataclass(frozen=True)
class StepResults(_StepSet):
    """Each step's result in pass order; ``None``: nothing to do, or it yielded."""

    compaction: Compaction | None = None
    deletes: DeleteRewrite | None = None
    manifests: ManifestRewrite | None = None
    expiry: Expiry | None = None
    orphans: OrphanSweep | None = None


#: The steps of a pass, in order (the names of reports, timings and yields).
STEPS = tuple(f.name for f in fields(StepResults))


class _Stats(Protocol):
    """A table's numbers before or after a pass (a dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def disk_bytes(self) -> int | None: ...


class _Results(Protocol):
    """The steps' results of a pass."""

    def done(self) -> tuple[str, ...]: ...

    def to_dict(self) -> dict[str, dict[str, object]]: ...


S = TypeVar("S", bound=_Stats)
A = TypeVar("A", bound=_Results)


@dataclass(frozen=True)
class _Report(Generic[S, A]):
    """One pass: what each step did (``actions``), the steps that gave way to a writer
    (``skipped``: step → why) and each step's wall seconds (``step_seconds``, a step with
    nothing to do included), in pass order. ``format``: the table's format (JSON)."""

    table: str
    dry_run: bool
    before: S
    after: S | None = None
    actions: A = None  # type: ignore[assignment]  # each report's own default, below
    skipped: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    step_seconds: Mapping[str, float] = field(default_factory=dict)
    format: ClassVar[str] = "iceberg"

    def _done(self) -> str:
        """The steps that did something with their seconds, and those that yielded."""
        done = ", ".join(f"{name} {self.step_seconds.get(name, 0.0):.1f}s"
                         for name in self.actions.done()) or "nothing to do"
        return done + (f"; yielded: {', '.join(self.skipped)}" if self.skipped else "")

    @property
    def bytes_freed(self) -> int | None:
        before = self.before.disk_bytes
        after = None if self.after is None else self.after.disk_bytes
        return None if before is None or after is None else max(0, before - after)

    def to_dict(self) -> dict[str, object]:
        """The report as JSON (``icetide maintain --format json``)."""
        return {"table": self.table, "format": self.format, "dry_run": self.dry_run,
                "before": asdict(self.before),
                "after": asdict(self.after) if self.after is not None else None,
                "actions": self.actions.to_dict(), "skipped": dict(self.skipped),
                "seconds": self.seconds, "step_seconds": dict(self.step_seconds),
                "bytes_freed": self.bytes_freed}


@dataclass(frozen=True)
class MaintenanceReport(_Report[TableStats, StepResults]):
    """One pass over an Iceberg table (the steps: :data:`STEPS`)."""

    actions: StepResults = StepResults()

    def summary(self) -> str:
        """One line: the steps that did something with their seconds, files before → after."""
        after = self.after.data_files if self.after is not None else "?"
        snaps = self.after.snapshots if self.after is not None else "?"
        return (f"{self.table} in {self.seconds:.1f}s ({self._done()}): data files "
                f"{self.before.data_files} → {after}, snapshots {self.before.snapshots} → {snaps}")


# --------------------------------------------------------------------------- Hudi tables
@dataclass(frozen=True)
class HudiStats:
    """A Hudi table's files and active timeline in numbers (one listing, no JVM)."""

    file_groups: int = 0
    base_files: int = 0  # every version on disk
    log_files: int = 0  # every version on disk (CDC logs not counted)
    #: log files newer than their file group's newest base file: what compaction merges
    pending_log_files: int = 0
    pending_file_groups: int = 0  # the file groups of those log files
    commits: int = 0  # completed writes in the active timeline (Hudi's commits timeline)
    disk_bytes: int | None = None


@dataclass(frozen=True)
class HudiCompaction:
    """``log_files`` of ``file_groups`` file groups merged into new base files by the
    compaction at ``instant`` (dry: ``None``)."""

    log_files: int
    file_groups: int
    instant: str | None = None


@dataclass(frozen=True)
class HudiClean:
    """Files of file slices older than a read as of ``earliest_retained`` (the oldest of
    the ``retain_commits`` newest commits) needs, deleted (dry: found); the commits kept
    for consumers, by completion time → who."""

    retain_commits: int
    earliest_retained: str
    files: int
    kept_for_consumers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HudiArchive:
    """Commits moved out of the active timeline (dry: that would be), ``keep`` left; the
    commits kept for flows (consumers' positions, writers' newest markers) → who."""

    commits: int
    keep: int
    kept_for_flows: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HudiStepResults(_StepSet):
    """Each step's result in pass order; ``None``: nothing to do, or it yielded."""

    compaction: HudiCompaction | None = None
    clean: HudiClean | None = None
    archive: HudiArchive | None = None


@dataclass(frozen=True)
class HudiMaintenanceReport(_Report[HudiStats, HudiStepResults]):
    """One pass over a Hudi table, as :class:`MaintenanceReport` for an Iceberg one."""

    actions: HudiStepResults = HudiStepResults()
    format: ClassVar[str] = "hudi"

    def summary(self) -> str:
        """One line: the steps that did something, log files and commits before → after."""
        logs = self.after.pending_log_files if self.after is not None else "?"
        commits = self.after.commits if self.after is not None else "?"
        return (f"{self.table} (hudi) in {self.seconds:.1f}s ({self._done()}): log files "
                f"to compact {self.before.pending_log_files} → {logs}, active commits "
                f"{self.before.commits} → {commits}")


#: What a pass over any table reports.
AnyReport = MaintenanceReport | HudiMaintenanceReport

