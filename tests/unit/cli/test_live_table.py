"""The demo's live table: while flows run, freshness is the newest data's age; once they
stopped, the freshness that data had when it was committed."""

from __future__ import annotations

import io

from rich.console import Console

from icetide.app.status import TableStatus
from icetide.cli.render import live_table, print_uncut


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


def test_piped_the_final_table_is_never_cut_to_80_columns() -> None:
    rows = [TableStatus(table=f"ods_behavior.clickevent_with_a_long_name_{i}",
                        rows_total=118_812_345, last_commit_ms=1_000, freshness_s=3497.25,
                        state="fail", batch_s=12.5, dead_letters=662,
                        dead_letters_total=1_234, activity="running")
            for i in range(2)]
    out = io.StringIO()
    console = Console(file=out, width=80)  # what rich picks without a terminal
    assert not console.is_terminal
    print_uncut(console, live_table(rows, now=40.0, title="icetide demo: done, 60s"))
    text = out.getvalue()
    assert "…" not in text
    for whole in ("118,812,345", "freshness", "status", "3497.2s", "DLQ total", "1,234",
                  "ods_behavior.clickevent_with_a_long_name_1"):
        assert whole in text
    assert "662" not in text  # the last commit's dead letters: not what the column means
    assert max(len(line) for line in text.splitlines()) < 150  # not padded to any width
    assert console.width == 80
