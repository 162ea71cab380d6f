"""``icetide status``'s table: what "ok" means for a stopped table, whole lines piped."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from icetide.app.lag import SourceLag
from icetide.app.status import TableStatus
from icetide.app.window import FreshnessWindow
from icetide.cli.render import live_table, print_uncut, status_table


def _text(row: TableStatus) -> str:
    out = io.StringIO()
    print_uncut(Console(file=out, width=80), status_table([row], now=4_000.0))
    return out.getvalue()


#: a table stopped an hour after it last committed, with a 10 s target it met
STOPPED = TableStatus(table="dws.product_views", last_commit_ms=500_000, freshness_s=3497.0,
                      achieved_s=2.1, target_s=10.0, state="ok", activity="stopped",
                      pending=False)


def test_a_stopped_table_says_its_state_is_the_one_it_had_when_committed() -> None:
    text = _text(STOPPED)
    assert "ok when committed · stopped (caught up)" in text
    assert "3497.0s (2.1s when committed)" in text


def test_a_stopped_table_judged_over_its_window_says_the_window() -> None:
    window = FreshnessWindow(start_ms=440_000, end_ms=500_000, commits=28, worst_s=6.2)
    row = replace(STOPPED, window=window)
    text, wide = _text(row), _shown(row, wide=True)
    assert "3497.0s (worst 6.2s)" in text and "00:07:20" not in text
    assert "judged by the worst freshness a commit achieved in the last 60 s" in text
    assert "--wide shows the times" in text
    assert "3497.0s (worst 6.2s when committed, 00:07:20–00:08:20)" in wide
    given = replace(row, window=replace(window, default=False))
    assert "achieved in 00:07:20–00:08:20 UTC" in _text(given)
    live = io.StringIO()
    print_uncut(Console(file=live, width=80), live_table([given], now=4_000.0))
    shown = " ".join(live.getvalue().split())  # the caption wraps at the table's width
    assert "6.2s" in shown and "2.1s" not in shown
    assert "achieved in 00:07:20–00:08:20 UTC" in shown


def test_a_running_table_is_judged_now() -> None:
    row = TableStatus(table="dws.product_views", last_commit_ms=3_999_000, freshness_s=3.0,
                      achieved_s=2.1, target_s=10.0, state="ok", activity="running",
                      pending=False)
    text = _text(row)
    assert "ok · running (caught up)" in text and "when committed" not in text



def _shown(row: TableStatus, wide: bool) -> str:
    out = io.StringIO()
    print_uncut(Console(file=out, width=80), status_table([row], now=4_000.0, wide=wide))
    return out.getvalue()


def test_the_default_table_is_compact_and_wide_has_every_column() -> None:
    row = TableStatus(table="ods.clicks", last_commit_ms=3_990_000, rows_total=1_200_000,
                      rows_last_commit=5_000, freshness_s=3.0, target_s=10.0, warn_s=5.0,
                      state="ok", mode="continuous", dead_letters=662,
                      dead_letters_total=1_200, expectations={"valid": {"failed": 3}},
                      lag=(SourceLag("kafka:clicks", None, "",
                                     error="[Errno 111] " + "connection refused " * 5),))
    compact, wide = _shown(row, wide=False), _shown(row, wide=True)
    assert "DLQ total" in compact and "1,200" in compact and "662" not in compact
    assert "10s" in compact and "warn 5s" not in compact and "10s ago" in compact
    assert "kafka:clicks: unknown ([Errno 111] connection" in compact and "…" in compact
    for column in ("rows last commit", "mode", "DLQ last commit", "expectations", "files"):
        assert column not in compact and column in wide
    assert "662" in wide and "5,000" in wide and "warn 5s" in wide and "…" not in wide
    assert max(map(len, compact.splitlines())) <= 140 < max(map(len, wide.splitlines()))
