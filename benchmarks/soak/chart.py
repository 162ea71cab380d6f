"""The soak benchmark's verdict, per-minute table (Markdown) and chart (PNG, matplotlib)."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

from benchmarks.soak.sample import Minute


def _p99(rows: list[Minute], attr: str) -> float | None:
    seen = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
    return max(seen) if seen else None


def _median(rows: list[Minute], attr: str) -> float | None:
    seen = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
    return statistics.median(seen) if seen else None


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _ratio(late: float | None, early: float | None) -> str:
    return "-" if late is None or not early else f"{late / early:.2f}"


def verdict(rows: list[Minute]) -> str:
    """The issue's targets: last 10 minutes vs first 10; queries at the end vs minute 10."""
    if len(rows) < 20:
        return f"{len(rows)} minutes: too short for the 10-minute comparisons."
    first, last = rows[:10], rows[-10:]
    worst = (_p99(first, "dws_p99"), _p99(last, "dws_p99"))
    typical = (_median(first, "dws_p99"), _median(last, "dws_p99"))
    lines = [f"DWS freshness p99, worst minute: first 10 minutes {_s(worst[0])}, last 10 "
             f"{_s(worst[1])} (ratio {_ratio(worst[1], worst[0])}; target ≤ 1.2); median "
             f"minute: {_s(typical[0])} and {_s(typical[1])} (ratio "
             f"{_ratio(typical[1], typical[0])})"]
    ten, end = rows[9], rows[-1]
    for name in ten.query_s:
        lines.append(f"`{name}` over ODS: minute 10 {ten.query_s[name]:.2f}s, end "
                     f"{end.query_s[name]:.2f}s (ratio "
                     f"{_ratio(end.query_s[name], ten.query_s[name])}; target ≤ 1.2); per "
                     f"million rows ({ten.ods_rows:,} → {end.ods_rows:,} rows): ratio "
                     f"{_ratio(_per_mrow(end, name), _per_mrow(ten, name))}")
    return "\n\n".join(lines)


def _per_mrow(row: Minute, query: str) -> float | None:
    return row.query_s[query] / row.ods_rows * 1e6 if row.ods_rows else None


def markdown_table(rows: list[Minute]) -> str:
    """One line a minute: freshness, queries, then files/deletes/metadata KB/snapshots."""
    if not rows:
        return "(no full minute measured)"
    tables, queries = list(rows[0].files), list(rows[0].query_s)
    head = ["min", "ODS p99 s", "DWS p99 s", "ODS rows", *[f"{q} s" for q in queries],
            *[f"{t} files/deletes/meta KB/snaps" for t in tables]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r.minute + 1), _fmt(r.ods_p99), _fmt(r.dws_p99), f"{r.ods_rows:,}",
                 *[f"{r.query_s[q]:.2f}" for q in queries],
                 *[f"{r.files[t]}/{r.deletes[t]}/{r.metadata_kb[t]:.0f}/{r.snapshots[t]}"
                   for t in tables]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def draw(rows: list[Minute], out: Path) -> Path | None:
    """Four panels over minutes: freshness p99, data files, metadata KB, query seconds.
    ``None`` (and a notice) without matplotlib (``pip install -e '.[bench]'``)."""
    if not rows or importlib.util.find_spec("matplotlib") is None:
        print("no chart: matplotlib is not installed (pip install -e '.[bench]')")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [r.minute + 1 for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for attr, label in (("ods_p99", "ODS"), ("dws_p99", "DWS")):
        axes[0][0].plot(minutes, [getattr(r, attr) or float("nan") for r in rows], ".-",
                        label=label)
    axes[0][0].set_title("freshness p99 (s)")
    axes[0][0].legend(fontsize=7)
    for ax, attr, title in ((axes[0][1], "files", "data files"),
                            (axes[1][0], "metadata_kb", "metadata.json (KB)"),
                            (axes[1][1], "query_s", "query over ODS (s)")):
        for key in getattr(rows[0], attr):
            ax.plot(minutes, [getattr(r, attr)[key] for r in rows], label=key)
        ax.set_title(title)
        ax.legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("minute")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
