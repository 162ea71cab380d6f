"""The window a stopped table is judged over: commits that made newer data visible."""

from __future__ import annotations

from icetide.app.status import TableStatus, _committed, committed_freshness
from icetide.app.window import WINDOW_S, achieved_per_commit, freshness_window

#: (commit ms, newest event ms), newest first, as a walk of the snapshots reads them
EVENTS = [
    (200_000, 190_000),  # 10 s: the newest
    (195_000, 140_000),  # re-reads older data (a downstream batch): not freshness
    (150_000, 148_000),  # 2 s
    (100_000, 60_000),   # 40 s: a cold start, more than a minute before the newest
]


def test_only_commits_that_made_newer_data_visible_count() -> None:
    assert achieved_per_commit(EVENTS) == [(100_000, 40.0), (150_000, 2.0), (200_000, 10.0)]


def test_by_default_the_last_minute_of_commits_is_judged() -> None:
    window = freshness_window(EVENTS)
    assert window is not None and window.default
    assert (window.start_ms, window.end_ms) == (200_000 - int(WINDOW_S * 1000), 200_000)
    assert window.commits == 2 and window.worst_s == 10.0  # the cold start is left out
    assert window.span() == "00:02:20–00:03:20"


def test_a_given_window_is_judged_over_its_own_commits() -> None:
    window = freshness_window(EVENTS, (90_000, 160_000))
    assert window is not None and not window.default
    assert window.commits == 2 and window.worst_s == 40.0
    empty = freshness_window(EVENTS, (10_000, 20_000))
    assert empty is not None and empty.commits == 0 and empty.worst_s is None
    assert freshness_window([]) is None


def test_a_stopped_table_is_judged_by_its_window_else_its_newest_data() -> None:
    window = freshness_window(EVENTS)
    assert _committed(window, achieved=1.0) == 10.0
    assert _committed(freshness_window(EVENTS, (10_000, 20_000)), achieved=1.0) == 1.0
    row = TableStatus(table="t", achieved_s=1.0, window=window)
    assert committed_freshness(row) == 10.0
    assert row.to_json()["window"] == {"start_ms": 140_000, "end_ms": 200_000, "commits": 2,
                                       "worst_s": 10.0, "default": True}
