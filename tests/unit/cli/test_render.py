"""``icetide status``'s table: what "ok" means for a stopped table, whole lines piped."""

from __future__ import annotations

import io

from rich.console import Console

from icetide.app.status import TableStatus
from icetide.cli.render import print_uncut, status_table


def _text(row: TableStatus) -> str:
    out = io.StringIO()
    print_uncut(Console(file=out, width=80), status_table([row], now=4_000.0))
    return out.getvalue()


def test_a_stopped_table_says_its_state_is_the_one_it_had_when_committed() -> None:
    row = TableStatus(table="dws.product_views", last_commit_ms=500_000, freshness_s=3497.0,
                      achieved_s=2.1, target_s=10.0, state="ok", activity="stopped",
                      pending=False)
    text = _text(row)
    assert "ok when committed · stopped (caught up)" in text
    assert "3497.0s (2.1s when committed)" in text


def test_a_running_table_is_judged_now() -> None:
    row = TableStatus(table="dws.product_views", last_commit_ms=3_999_000, freshness_s=3.0,
                      achieved_s=2.1, target_s=10.0, state="ok", activity="running",
                      pending=False)
    text = _text(row)
    assert "ok · running (caught up)" in text and "when committed" not in text

