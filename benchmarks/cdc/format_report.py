"""The pure half of ``python -m benchmarks.cdc --formats``: which table formats, how a
change's freshness is found from the lake's commits, and the report's rows.

**Freshness** of a change: from its commit in MariaDB (the writer notes the time and the
binlog position right after each of its transactions) to the first lake commit whose
marker's binlog end position is at or past it — when a reader of the table first sees it.
Iceberg commits are snapshots (their ``timestamp-ms``), Hudi's are completed instants
(their completion time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: format name → (table format, Hudi table type or None), in report order
FORMATS: dict[str, tuple[str, str | None]] = {
    "iceberg": ("iceberg", None),
    "hudi_mor": ("hudi", "MERGE_ON_READ"),
    "hudi_cow": ("hudi", "COPY_ON_WRITE"),
}
LABELS = {"iceberg": "Iceberg MERGE (merge-on-read deletes)",
          "hudi_mor": "Hudi merge-on-read upsert", "hudi_cow": "Hudi copy-on-write upsert"}

#: a binlog coordinate as a sort key: (file sequence number, position)
Coordinate = tuple[int, int]


def parse_formats(text: str) -> list[str]:
    """``"iceberg,hudi_mor"`` → the names, refusing an unknown one with the known ones."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise SystemExit(f"--formats {text!r}: {', '.join(unknown) or 'nothing'} is not a "
                         f"format; give some of {', '.join(FORMATS)}, comma-separated")
    return [n for n in FORMATS if n in names]


def parse_rates(text: str) -> list[str]:
    """``"2,snapshot"`` → rates of changes/s: numbers, or ``snapshot`` (the snapshot's
    own rows/s, measured first)."""
    rates = [r.strip() for r in text.split(",") if r.strip()]
    for rate in rates:
        if rate != "snapshot" and not _positive(rate):
            raise SystemExit(f"--rates {text!r}: {rate!r} is neither a number of changes/s "
                             "above 0 nor 'snapshot' (the snapshot's rows/s)")
    return rates


def _positive(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


@dataclass(frozen=True)
class Tick:
    """One writer transaction: when it committed (epoch ms), the binlog end after it, and
    the rows it updated."""

    at_ms: int
    end: Coordinate
    rows: int = 1


def achieved(ticks: Sequence[Tick], seconds: float) -> float:
    """Rows/s the writer reached over its ``seconds`` (below the asked rate when a
    transaction took longer than its turn)."""
    return sum(t.rows for t in ticks) / seconds if seconds > 0 else math.nan


@dataclass(frozen=True)
class LakeCommit:
    """One lake commit of the flow: when it became visible and its binlog end position."""

    at_ms: int
    end: Coordinate


def freshness_ms(ticks: Sequence[Tick], commits: Sequence[LakeCommit]) -> list[int]:
    """Per tick, ms from its commit to the first lake commit holding it; ticks no commit
    reached are left out (the report counts them)."""
    ordered = sorted(commits, key=lambda c: c.at_ms)
    out = []
    for tick in ticks:
        seen = next((c for c in ordered if c.end >= tick.end and c.at_ms >= tick.at_ms), None)
        if seen is not None:
            out.append(seen.at_ms - tick.at_ms)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))])


def cpu_per_million(cpu_s: float, changes: int) -> float:
    """CPU seconds per 1,000,000 changes."""
    return cpu_s * 1_000_000 / changes if changes else math.nan


def apply_rows(changes: int, results: Mapping[str, Mapping[str, float]]) -> str:
    """Report rows of the apply measurement, one per format."""
    out = ""
    for name, r in results.items():
        out += (f"| {LABELS[name]}: apply of {changes:,} updates | {r['apply_rps']:,.0f} rows/s "
                f"({r['apply_s']:.1f}s, {r['apply_batches']:.0f} batch(es)), "
                f"{cpu_per_million(r['apply_cpu_s'], changes):,.0f} CPU-s per 1 M changes; "
                f"snapshot {r['snapshot_rps']:,.0f} rows/s |\n")
    return out


def freshness_rows(results: Mapping[str, Mapping[str, Sequence[int]]],
                   ticks: Mapping[str, Mapping[str, tuple[int, float]]]) -> str:
    """Report rows of the freshness measurement: p50 / p99 / max per format and rate;
    ``ticks``: the writes and the rows/s reached per format and rate."""
    out = ""
    for name, by_rate in results.items():
        for rate, values in by_rate.items():
            writes, reached = ticks[name][rate]
            late = f", {writes - len(values)} not committed in the window" * (
                writes > len(values))
            p50, p99, top = (percentile(values, q) / 1000 for q in (50, 99, 100))
            out += (f"| {LABELS[name]}: freshness at {rate} changes/s | p50 {p50:.2f}s, "
                    f"p99 {p99:.2f}s, max {top:.2f}s ({writes} writes, {reached:,.1f} "
                    f"rows/s reached{late}) |\n")
    return out
