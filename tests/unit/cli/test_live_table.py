"""The demo's live table: while flows run, freshness is the newest data's age; once they
stopped, the freshness that data had when it was committed."""

from __future__ import annotations

from rich.console import Console

from icetide.app.status import TableStatus
from icetide.cli.render import live_table


def _text(stopped: bool) -> str:
    row = TableStatus(table="dws.product_views", rows_total=20, last_commit_ms=1_000,
                      freshness_s=34.7, achieved_s=6.2, state="ok", batch_s=1.1,
                      dead_letters=0, activity="stopped" if stopped else "running")
    console = Console(record=True, width=100)
    console.print(live_table([row], now=40.0))
    return console.export_text()


def test_running_shows_the_age_and_stopped_the_freshness_at_commit() -> None:
    assert "34.7s" in _text(stopped=False) and "6.2s" not in _text(stopped=False)
    assert "6.2s" in _text(stopped=True) and "34.7s" not in _text(stopped=True)
