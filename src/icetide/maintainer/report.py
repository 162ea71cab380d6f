"""What one maintenance pass over one table did (or, dry, would do), as typed values.

Each step has its own frozen result (:class:`Compaction`, :class:`DeleteRewrite`,
:class:`ManifestRewrite`, :class:`Expiry`, :class:`OrphanSweep`); a step that rewrote
files holds Iceberg's counts, typed by the procedure's column names
(:class:`RewriteCounts`), and ``None`` there in a dry run. ``to_dict`` gives the
JSON of ``icetide maintain --format json``: each step's fields with Iceberg's counts
beside them, under the step's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Literal

from icetide.tables.maintenance_policy import Strategy


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


def step_dict(step: Step) -> dict[str, object]:
    """A step as JSON: its fields, Iceberg's counts (``done``) beside them."""
    out = {f.name: getattr(step, f.name) for f in fields(step) if f.name != "done"}
    done = getattr(step, "done", None)
    return {**out, **(done.to_dict() if done is not None else {})}


@dataclass(frozen=True)
class StepResults:
    """Each step's result in pass order; ``None``: nothing to do, or it yielded."""

    compaction: Compaction | None = None
    deletes: DeleteRewrite | None = None
    manifests: ManifestRewrite | None = None
    expiry: Expiry | None = None
    orphans: OrphanSweep | None = None

    def done(self) -> tuple[str, ...]:
        """The names of the steps that did something (dry: would), in pass order."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)

    def to_dict(self) -> dict[str, dict[str, object]]:
        return {name: step_dict(getattr(self, name)) for name in self.done()}


#: The steps of a pass, in order (the names of reports, timings and yields).
STEPS = tuple(f.name for f in fields(StepResults))


@dataclass(frozen=True)
class MaintenanceReport:
    """One pass: what each step did (``actions``), the steps that gave way to a writer
    (``skipped``: step → why) and each step's wall seconds (``step_seconds``, a step with
    nothing to do included), in pass order."""

    table: str
    dry_run: bool
    before: TableStats
    after: TableStats | None = None
    actions: StepResults = StepResults()
    skipped: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    step_seconds: Mapping[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: the steps that did something with their seconds, files before → after."""
        done = ", ".join(f"{name} {self.step_seconds.get(name, 0.0):.1f}s"
                         for name in self.actions.done()) or "nothing to do"
        after = self.after.data_files if self.after is not None else "?"
        snaps = self.after.snapshots if self.after is not None else "?"
        skipped = f"; yielded: {', '.join(self.skipped)}" if self.skipped else ""
        return (f"{self.table} in {self.seconds:.1f}s ({done}{skipped}): data files "
                f"{self.before.data_files} → {after}, snapshots {self.before.snapshots} → {snaps}")

    @property
    def bytes_freed(self) -> int | None:
        if self.after is None or self.before.disk_bytes is None or self.after.disk_bytes is None:
            return None
        return max(0, self.before.disk_bytes - self.after.disk_bytes)

    def to_dict(self) -> dict[str, object]:
        """The report as JSON (``icetide maintain --format json``)."""
        return {"table": self.table, "dry_run": self.dry_run, "before": asdict(self.before),
                "after": asdict(self.after) if self.after is not None else None,
                "actions": self.actions.to_dict(), "skipped": dict(self.skipped),
                "seconds": self.seconds, "step_seconds": dict(self.step_seconds),
                "bytes_freed": self.bytes_freed}
