"""Status rows as rich tables (built here, printed by the CLI or the demo's live view)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from rich import box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from icetide.app.status import TableStatus, committed_freshness
from icetide.app.window import WINDOW_S

STATE_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


def _age(ms: int | None, now: float) -> str:
    if ms is None:
        return "never"
    stamp = datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S")
    return f"{stamp} ({max(0.0, now - ms / 1000):.0f}s ago)"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _target(row: TableStatus, wide: bool = True) -> str:
    """``10s (warn 5s)``; compact: the target alone (the warning where there is no target)."""
    if row.target_s is None and row.warn_s is None:
        return "-"
    warn = f" (warn {row.warn_s:g}s)" if row.warn_s is not None and wide else ""
    return f"{row.target_s:g}s{warn}" if row.target_s is not None else f"warn {row.warn_s:g}s"


def _expectations(row: TableStatus) -> str:
    parts = [f"{name} {c.get('failed', 0)} failed/{c.get('action', '?')}"
             for name, c in sorted(row.expectations.items())]
    return "\n".join(parts) or "-"


def runs_on(rows: Sequence[TableStatus]) -> str | None:
    """``runs on <master> · N executors: …`` from the newest commits (None: unknown)."""
    seen: dict[str, tuple[str, ...]] = {}
    for row in rows:
        if row.master:
            seen[row.master] = row.executors
    parts = [f"{master} · {len(ex)} executor{'s' * (len(ex) != 1)}"
             + (": " + ", ".join(ex) if ex else "") for master, ex in seen.items()]
    return "runs on " + "; ".join(parts) if parts else None


#: A cell's text in the compact table at most (the whole under ``--wide`` and in JSON).
COMPACT_CELL = 48


def _cut(text: str, wide: bool) -> str:
    return text if wide or len(text) <= COMPACT_CELL else text[:COMPACT_CELL - 1] + "…"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


#: (header, cell, shown in the compact table too): one meaning per column, said in its header
_COLUMNS: tuple[tuple[str, Callable[[TableStatus, float, bool], str], bool], ...] = (
    ("table", lambda r, now, wide: r.table, True),
    ("last commit", lambda r, now, wide: (_age if wide else _ago)(r.last_commit_ms, now), True),
    ("rows", lambda r, now, wide: "?" if r.rows_total is None else f"{r.rows_total:,}", True),
    ("rows last commit", lambda r, now, wide: _count(r.rows_last_commit), False),
    ("freshness", lambda r, now, wide: _freshness(r, wide), True),
    ("target", lambda r, now, wide: _target(r, wide), True),
    ("status", lambda r, now, wide: _state(r, wide), True),
    ("mode", lambda r, now, wide: r.mode or "-", False),
    ("DLQ total", lambda r, now, wide: _count(r.dead_letters_total), True),
    ("DLQ last commit", lambda r, now, wide: _count(r.dead_letters), False),
    ("expectations", lambda r, now, wide: _expectations(r), False),
    ("source lag", lambda r, now, wide: "\n".join(escape(_cut(lag.short(), wide))
                                                  for lag in r.lag) or "-", True),
    ("files", lambda r, now, wide: _storage(r, now), False),
)


def status_table(rows: Sequence[TableStatus], now: float | None = None,
                 title: str | None = None, catalog: str | None = None,
                 wide: bool = False) -> Table:
    """The table of ``icetide status``: compact (table, last commit, rows, freshness,
    target, status, dead letters held, source lag; long cells cut), or ``wide`` with
    every column (rows and dead letters of the last commit, refresh mode, expectations,
    files) and nothing cut. Its caption names the catalog's address and the Spark master
    and executors of the newest commits."""
    now = time.time() if now is None else now
    caption = "\n".join(c for c in (f"catalog {catalog}" if catalog else None, runs_on(rows),
                                    window_note(rows, wide)) if c) or None
    table = Table(title=title, header_style="bold", caption=caption,
                  box=box.HEAVY_HEAD if wide else box.SIMPLE_HEAD, padding=(0, 1),
                  pad_edge=wide)
    columns = [(name, cell) for name, cell, compact in _COLUMNS if wide or compact]
    for name, _ in columns:
        table.add_column(name)
    for row in rows:
        if not row.exists:
            table.add_row(row.table, "not created", *["-"] * (len(columns) - 2))
            continue
        table.add_row(*(cell(row, now, wide) for _, cell in columns))
    return table


def judged_at_commit(row: TableStatus) -> bool:
    """A stopped table is judged by the freshness its commits achieved (the worst in its
    window, :mod:`icetide.app.window`), not by its data's age now."""
    return row.activity in ("stopped", "suspended") and row.state in STATE_STYLE


def _state(row: TableStatus, wide: bool = True) -> str:
    """``ok · running (caught up)``; a stopped table: ``ok when committed · stopped``; a
    flow's error (cut unless ``wide``)."""
    if row.errors:
        errors = "; ".join(f"{f}: {m}" for f, m in row.errors.items())
        return "[red]error[/]: " + escape(_cut(errors, wide))
    state = f"[{STATE_STYLE[row.state]}]{row.state}[/]" if row.state in STATE_STYLE \
        else row.state
    if judged_at_commit(row):
        state += " when committed"
    if row.activity in ("stopped", "running", "suspended"):
        state += " · " + row.activity + (" (caught up)" if row.pending is False else "")
    return state


def _freshness(row: TableStatus, wide: bool = True) -> str:
    """The newest data's age; a stopped table's also what it is judged by: the worst its
    commits achieved in its window (``3497.0s (worst 6.2s)``; ``wide``: ``3497.0s (worst
    6.2s when committed, 12:01:03–12:02:03)``), else what its newest data had when
    committed."""
    if not judged_at_commit(row):
        return _seconds(row.freshness_s)
    window = row.window
    if window is not None and window.worst_s is not None:
        worst = f"worst {_seconds(window.worst_s)}"
        if wide:
            worst += f" when committed, {window.span()}"
        return f"{_seconds(row.freshness_s)} ({worst})"
    if row.achieved_s is not None:
        return f"{_seconds(row.freshness_s)} ({_seconds(row.achieved_s)} when committed)"
    return _seconds(row.freshness_s)


def window_note(rows: Sequence[TableStatus], wide: bool = True) -> str | None:
    """What the stopped tables among ``rows`` are judged by, and over which window (None:
    no row is judged so); not ``wide``: where the windows' times are."""
    windows = [r.window for r in rows if judged_at_commit(r) and r.window is not None
               and r.window.worst_s is not None]
    if not windows:
        return None
    if not all(w.default for w in windows):
        return (f"stopped tables: judged by the worst freshness a commit achieved in "
                f"{windows[0].span()} UTC")
    shown = "the times shown" if wide else "--wide shows the times"
    return (f"stopped tables: judged by the worst freshness a commit achieved in the "
            f"last {WINDOW_S:g} s they committed ({shown})")


def _storage(row: TableStatus, now: float) -> str:
    """``714 files · avg 1.2 MB · 3 deletes · 120 snapshots · maintained 40s ago``."""
    st = row.storage
    if st is None or st.data_files is None:
        return "-"
    avg = "-" if st.avg_file_bytes is None else f"{st.avg_file_bytes / 1_048_576:.1f} MB"
    return (f"{st.data_files} files · avg {avg} · {st.delete_files or 0} deletes · "
            f"{st.snapshots} snapshots · maintained {_ago(st.last_maintenance_ms, now)}")


def _ago(ms: int | None, now: float) -> str:
    return "never" if ms is None else f"{max(0.0, now - ms / 1000):.0f}s ago"


def live_table(rows: Sequence[TableStatus], now: float | None = None,
               title: str | None = None) -> Table:
    """The compact table of the demo's live view (fits 80 columns): rows, last commit,
    freshness, status, the newest batch's duration and the rows the table's dead-letter
    tables hold (``DLQ total``: what the demo's summary counts, not one commit's). A
    stopped table's freshness is what its status judges — the worst its commits achieved
    in its window, said in the caption — not its data's age since."""
    now = time.time() if now is None else now
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
                  caption=window_note(rows))
    for column in ("table", "rows", "commit", "freshness", "status", "batch", "DLQ total"):
        table.add_column(column, justify="left" if column == "table" else "right",
                         no_wrap=True)
    for row in rows:
        if not row.exists:
            continue
        state = f"[{STATE_STYLE[row.state]}]{row.state}[/]" if row.state in STATE_STYLE \
            else row.state
        table.add_row(row.table, "?" if row.rows_total is None else f"{row.rows_total:,}",
                      _ago(row.last_commit_ms, now),
                      _seconds(committed_freshness(row) if row.activity in ("stopped", "suspended")
                               else row.freshness_s), state,
                      _seconds(row.batch_s),
                      _count(row.dead_letters_total))
    return table


def print_uncut(console: Console, renderable: RenderableType) -> None:
    """Print ``renderable`` on ``console``: as wide as the terminal on a terminal, else
    (a pipe, a log file) as wide as it needs, so no number or name is cut to fit 80
    columns and no line is padded beyond its content."""
    if console.is_terminal:
        console.print(renderable)
        return
    saved = console.width
    needed = console.measure(renderable, options=console.options.update_width(100_000))
    console.width = max(saved, needed.maximum)
    try:
        console.print(renderable)
    finally:
        console.width = saved
