"""The window of commits a stopped table is judged by (``icetide status``, the demo).

A table that no process runs any more has no "now" to be judged by: its data's age only
grows. It is judged by what its commits achieved instead — over a window, not by its
last commit alone, so one slow commit (or one lucky one) does not decide, and a run's
first minute (a cold JVM, the first compiles) is not what a table is judged by forever
after.

A commit counts when it made newer data visible (its newest event time is above every
earlier commit's): the freshness it achieved is its commit time minus that event time.
Commits that made nothing newer visible (a downstream batch re-reading data already
counted, a retraction, a compaction) are not freshness. The window is, by default, the
minute of commits up to the table's newest such commit (:data:`WINDOW_S`); the demo
passes its own measured window (:mod:`icetide.devkit.demo.warmup`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

#: Seconds of commits a stopped table is judged over by default, ending at its newest
#: commit that made newer data visible: a minute, the demo's default run.
WINDOW_S = 60.0


@dataclass(frozen=True)
class FreshnessWindow:
    """The commits that made newer data visible between ``start_ms`` and ``end_ms``
    (commit times, epoch ms): how many, and the worst freshness one of them achieved."""

    start_ms: int
    end_ms: int
    commits: int
    #: the largest ``commit time − newest event time`` among them (None: no commit)
    worst_s: float | None
    #: whether the window is the default (the table's last minute of commits) or given
    default: bool = True

    def span(self) -> str:
        """``12:01:03–12:02:03`` (UTC)."""
        return f"{_clock(self.start_ms)}–{_clock(self.end_ms)}"


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S")


def achieved_per_commit(events: Sequence[tuple[int, int]]) -> list[tuple[int, float]]:
    """``(commit ms, achieved s)`` of each commit that made newer data visible, oldest
    first, from ``events``: ``(commit ms, newest event ms)`` of the commits, newest first."""
    out: list[tuple[int, float]] = []
    newest: int | None = None
    for commit_ms, event_ms in reversed(events):
        if newest is None or event_ms > newest:
            newest = event_ms
            out.append((commit_ms, max(0.0, (commit_ms - event_ms) / 1000)))
    return out


def freshness_window(events: Sequence[tuple[int, int]],
                     window: tuple[int, int] | None = None) -> FreshnessWindow | None:
    """The window ``window`` (commit times, epoch ms; None: the :data:`WINDOW_S` up to the
    newest commit that made newer data visible) judged over ``events`` (as
    :func:`achieved_per_commit` takes them); None when no commit made data visible."""
    advances = achieved_per_commit(events)
    if not advances:
        return None
    if window is None:
        end = advances[-1][0]
        start, default = end - int(WINDOW_S * 1000), True
    else:
        (start, end), default = window, False
    inside = [achieved for at, achieved in advances if start <= at <= end]
    return FreshnessWindow(start, end, len(inside), max(inside, default=None), default)
