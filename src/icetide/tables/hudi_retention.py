"""How much of a Hudi table's history a maintenance pass keeps (pure, no JVM).

Hudi's cleaner (policy ``KEEP_LATEST_COMMITS``) and archiver count *commits*: the
completed instants of the table's commits timeline (delta commits, commits, compactions,
replaces) in the order Hudi sorts them, by requested time. The cleaner keeps every file
slice a read as of the ``hoodie.cleaner.commits.retained``-th newest commit needs; the
archiver moves instants out of the active timeline until ``hoodie.keep.min.commits`` are
left. So "keep commit *c* and everything after it" is a count: the commits from *c* to the
newest.

What a pass keeps, as :func:`hudi_retention` computes it:

* the policy's history: commits completed within ``snapshot_retention``, and at least
  ``retain_last`` commits (the same keys as an Iceberg table's expiry);
* every **consumer's** position (``{"instant": <completion time>}`` under
  ``hudi:<catalog.db.table>`` in any flow's marker, :mod:`icetide.sources.hudi`), with the
  file slices a read as of it needs: the flow reads the commits after it incrementally and
  the rows as of it by time travel. A consumer further behind than ``max_consumer_lag`` is
  not waited for (it stops with ``PositionLostError`` naming its full refresh, never skips);
* every **writer's** newest marker (the commit a flow resumes from) stays in the active
  timeline, however old: archiving it would lose the flow's position. Its file slices
  are not needed (nothing reads the table as of it), so it bounds archival, not cleaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from icetide.config import MaintenanceConfig
from icetide.model.source_key import SourceKey
from icetide.tables.maintenance_policy import FlowMark


class HudiCommit(NamedTuple):
    """A completed commit of a Hudi table: requested and completion time, completion ms."""

    requested: str
    completed: str
    completed_ms: int


@dataclass(frozen=True)
class HudiRetention:
    """What one pass keeps: the cleaner's and the archiver's counts, and why."""

    #: ``hoodie.cleaner.commits.retained``: file slices of the newest this many commits
    clean_commits: int
    #: ``hoodie.keep.min.commits``: instants left in the active timeline (``keep.max``
    #: is one more: archival starts above it)
    archive_min: int
    #: commits kept for flows: completion time → who needs it
    kept_for: dict[str, str] = field(default_factory=dict)

    @property
    def archive_max(self) -> int:
        return self.archive_min + 1

    def archivable(self, commits: int) -> int:
        """Commits an archival of a timeline of ``commits`` moves out of it."""
        return commits - self.archive_min if commits > self.archive_max else 0


def consumer_positions(ident: str, marks: Iterable[FlowMark]) -> dict[str, str]:
    """Completion times of ``ident``'s commits that flows reading it committed as their
    position (start or end of their newest marker) → who."""
    key = str(SourceKey.hudi(ident))
    found: dict[str, str] = {}
    for mark in marks:
        for position in mark.positions:
            pos = position.get(key)
            instant = pos.get("instant") if isinstance(pos, Mapping) else None
            if isinstance(instant, str) and instant:
                found.setdefault(instant, f"flow {mark.flow} (reads {ident}, committed to "
                                          f"{mark.table})")
    return found


def _count_from(commits: Sequence[HudiCommit], completed: str) -> int | None:
    """Commits from the one completed at ``completed`` to the newest (``None``: not in
    the active timeline any more)."""
    for i, commit in enumerate(commits):
        if commit.completed == completed:
            return len(commits) - i
    return None


def _history(commits: Sequence[HudiCommit], now_ms: int, policy: MaintenanceConfig) -> int:
    """Commits the policy keeps: those completed within ``snapshot_retention``, at least
    ``retain_last``."""
    cutoff = now_ms - int(policy.snapshot_retention * 1000)
    young = [len(commits) - i for i, c in enumerate(commits) if c.completed_ms >= cutoff]
    return min(len(commits), max([policy.retain_last, *young]))


def hudi_retention(commits: Sequence[HudiCommit], consumers: Mapping[str, str],
                   writers: Mapping[str, str], now_ms: int,
                   policy: MaintenanceConfig) -> HudiRetention:
    """The counts of one pass over a table whose commits are ``commits`` (ordered by
    requested time), ``consumers``/``writers``: completion times → who needs them."""
    by_completion = {c.completed: c for c in commits}
    floor = None if policy.max_consumer_lag is None else \
        now_ms - int(policy.max_consumer_lag * 1000)
    clean = max(1, _history(commits, now_ms, policy))
    kept: dict[str, str] = {}
    for instant, who in consumers.items():
        count, commit = _count_from(commits, instant), by_completion.get(instant)
        if count is None or commit is None or (floor is not None and commit.completed_ms < floor):
            continue
        clean = max(clean, count)
        kept[instant] = who
    archive = clean + 1
    for instant, who in writers.items():
        count = _count_from(commits, instant)
        if count is not None:
            archive = max(archive, count)
            kept.setdefault(instant, who)
    return HudiRetention(clean, archive, kept)


#: Extensions of Hudi's base files.
BASE_EXTENSIONS = (".parquet", ".orc", ".hfile")


@dataclass(frozen=True)
class HudiFile:
    """A data file of a Hudi table, by its name: its file group, the instant that wrote
    it (requested time), whether a base file or a log file (``cdc``: a CDC log)."""

    group: str
    instant: str
    base: bool
    cdc: bool = False


def parse_file(name: str) -> HudiFile | None:
    """A Hudi data file's name → what it is; ``None`` for anything else (checksums,
    partition metadata). Base: ``<group>_<token>_<instant>.parquet``; log (1.x):
    ``.<group>_<instant>.log.<version>_<token>`` (``.cdc`` at the end of a CDC log)."""
    if name.endswith(".crc") or name.startswith(".hoodie"):
        return None
    if name.startswith(".") and ".log." in name:
        group, _, instant = name[1:].split(".log.", 1)[0].rpartition("_")
        return HudiFile(group, instant, False, name.endswith(".cdc")) if group else None
    if name.endswith(BASE_EXTENSIONS) and not name.startswith("."):
        parts = name.rsplit(".", 1)[0].split("_")
        return HudiFile(parts[0], parts[-1], True) if len(parts) >= 3 else None
    return None


def _bases(files: Iterable[HudiFile]) -> dict[str, list[str]]:
    """File group → the instants of its base files, oldest first."""
    bases: dict[str, list[str]] = {}
    for f in files:
        if f.base:
            bases.setdefault(f.group, []).append(f.instant)
    return {g: sorted(i) for g, i in bases.items()}


def file_counts(files: Sequence[HudiFile]) -> dict[str, int]:
    """File groups, base files, log files (CDC logs aside), and the log files newer than
    their group's newest base file (those a compaction merges) and their groups."""
    bases = _bases(files)
    logs = [f for f in files if not f.base and not f.cdc]
    pending = [f for f in logs if not bases.get(f.group) or f.instant > bases[f.group][-1]]
    return {"file_groups": len({f.group for f in files}),
            "base_files": sum(len(i) for i in bases.values()), "log_files": len(logs),
            "pending_log_files": len(pending),
            "pending_file_groups": len({f.group for f in pending})}


def cleanable(files: Iterable[HudiFile], earliest: str) -> int:
    """Files a clean keeping every file slice a read as of the commit requested at
    ``earliest`` needs would delete: in each file group, the slices before the newest
    one whose base file is older than ``earliest`` (its base file and its logs)."""
    files = list(files)
    keep_from: dict[str, str] = {}
    for group, instants in _bases(files).items():
        older = [i for i in instants if i < earliest]
        if older:
            keep_from[group] = older[-1]
    return sum(1 for f in files if f.group in keep_from and f.instant < keep_from[f.group])


def earliest_retained(commits: Sequence[HudiCommit], count: int) -> str | None:
    """Requested time of the oldest of the newest ``count`` commits (what Hudi's cleaner
    calls the earliest commit to retain); ``None`` when there are no more than ``count``."""
    return commits[len(commits) - count].requested if len(commits) > count else None
