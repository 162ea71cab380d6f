"""``python -m benchmarks.soak --minutes 60 --rate 5000``: the whole pipeline for an hour.

``examples/clickstream`` runs as ``icetide run`` with its defaults (maintenance on) —
dimensions by CDC from a private MariaDB with business updates flowing, ``--rate``
clicks/s, one probe click a second (the harness of :mod:`benchmarks.freshness`). Once a
minute it records, per main table, data files, delete files, metadata.json size and
snapshots, and the time of ``SELECT count(*)`` and the seed's ``GROUP BY productId, name,
product_price`` over ODS (icetide's DuckDB path); a minute later, that minute's ODS and
DWS freshness p99 from its probes. Writes the per-minute table and a chart (PNG, needs
the ``bench`` extra: matplotlib; checked before the run, ``--no-chart`` to go without) to
docs/benchmarks.md. Run it alone on a quiet machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.freshness.run import Load, RunResult, keep_log, measure
from benchmarks.report import DOC, append_section
from benchmarks.soak.chart import draw, markdown_table, verdict
from benchmarks.soak.sample import Minute, fill_freshness, minute_row

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=int, default=60, help="how long to ingest")
    p.add_argument("--rate", type=float, default=5_000.0, help="click events/s produced")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--trigger", type=float, default=1.0,
                   help="minimum spacing between one flow's batches, seconds")
    p.add_argument("--out", type=Path, default=None,
                   help="where the chart goes (default: docs/img/soak-<date>.png, so the "
                        "sections of earlier runs keep theirs)")
    p.add_argument("--no-chart", action="store_true", help="no chart (no matplotlib needed)")
    p.add_argument("--keep-log", type=Path, default=Path("soak-pipeline.log"),
                   help="where the pipeline's log is copied at the end")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    a = p.parse_args(argv)
    if not a.no_chart and importlib.util.find_spec("matplotlib") is None:
        p.error("the chart needs matplotlib, which is not installed: run "
                "`.venv/bin/pip install -e '.[bench]'` first, or pass --no-chart")
    if a.out is None:
        a.out = DOC.parent / "img" / f"soak-{datetime.now(UTC):%Y-%m-%d-%H%M}.png"
    return a


class Recorder:
    """The sampler: one :class:`Minute` per full minute, its freshness a minute later."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.rows: list[Minute] = []
        self.start_ms = int(time.time() * 1000)

    def __call__(self, catalog: Any, elapsed: float, result: RunResult) -> None:
        if elapsed < 60 * (len(self.rows) + 1):
            return
        self.rows.append(minute_row(self.settings, catalog, len(self.rows)))
        if len(self.rows) >= 2:
            fill_freshness(catalog, self.rows[-2], result.probes, self.start_ms)

    def finish(self, catalog: Any, result: RunResult) -> None:
        if self.rows:
            fill_freshness(catalog, self.rows[-1], result.probes, self.start_ms)


def main(argv: list[str] | None = None) -> None:
    from icetide.config import Settings

    a = _args(argv)
    load = Load(a.rate, a.minutes * 60.0, a.partitions, a.trigger)
    with tempfile.TemporaryDirectory(prefix="icetide-soak-") as tmp:
        recorder = Recorder(Settings(home=Path(tmp) / "run"))
        try:
            result = measure(Path(tmp) / "run", load, ROOT / "src", recorder,
                             finish=recorder.finish, reconcile=True)
        finally:
            if keep_log(Path(tmp) / "run", a.keep_log):
                print(f"the pipeline's log: {a.keep_log}")
    _report(recorder.rows, result, a)


def _checks(result: RunResult) -> str:
    failed = [c for c in result.checks if not c.ok]
    if failed:
        return "Reconciliation FAILED: " + "; ".join(
            f"{c.name}: expected {c.expected}, found {c.actual}" for c in failed)
    return f"Reconciliation at the end: {len(result.checks)} checks passed."


def _report(rows: list[Minute], result: RunResult, a: argparse.Namespace) -> None:
    table = markdown_table(rows)
    chart = None if a.no_chart else draw(rows, a.out)
    body = (f"Command: `python -m benchmarks.soak --minutes {a.minutes} --rate {a.rate:.0f} "
            f"--trigger {a.trigger:g}`\n\n{verdict(rows)}\n\n{_checks(result)}\n\nKafka "
            f"backlog every minute "
            f"(events): {', '.join(f'{b:,}' for b in result.backlog[::6])}\n\n{table}\n")
    if chart is not None:
        where = chart.relative_to(DOC.parent) if chart.is_relative_to(DOC.parent) else chart
        body += f"\n![soak]({where.as_posix()})\n"
    print(body)
    if not a.no_doc:
        head = verdict(rows).splitlines()[0]
        print(f"written to {append_section('Soak (benchmarks/soak)', body, headline=head)}")


if __name__ == "__main__":
    main()
