"""The soak benchmark's per-minute table (Markdown) and chart (PNG, matplotlib)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from benchmarks.soak.sample import Minute


def markdown_table(rows: list[Minute]) -> str:
    """One line a minute: freshness p99, then files / metadata KB / snapshots per table."""
    if not rows:
        return "(no full minute measured)"
    tables = list(rows[0].files)
    head = ["minute", "freshness p99 (s)", "query (s)",
            *[f"{t} files/meta KB/snaps" for t in tables]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        p99 = "-" if r.freshness_p99 is None else f"{r.freshness_p99:.2f}"
        cells = [f"{r.files[t]}/{r.metadata_kb[t]:.0f}/{r.snapshots[t]}" for t in tables]
        lines.append("| " + " | ".join([str(r.minute + 1), p99, f"{r.query_s:.2f}", *cells])
                     + " |")
    return "\n".join(lines)


def draw(rows: list[Minute], out: Path) -> Path | None:
    """Four panels over minutes: freshness p99, data files, metadata KB, snapshots.
    ``None`` (and a notice) without matplotlib (``pip install -e '.[bench]'``)."""
    if not rows or importlib.util.find_spec("matplotlib") is None:
        print("no chart: matplotlib is not installed (pip install -e '.[bench]')")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [r.minute + 1 for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    axes[0][0].plot(minutes, [r.freshness_p99 or float("nan") for r in rows])
    axes[0][0].set_title("DWS freshness p99 (s)")
    for ax, attr, title in ((axes[0][1], "files", "data files"),
                            (axes[1][0], "metadata_kb", "metadata.json (KB)"),
                            (axes[1][1], "snapshots", "snapshots")):
        for table in rows[0].files:
            ax.plot(minutes, [getattr(r, attr)[table] for r in rows], label=table)
        ax.set_title(title)
    axes[0][1].legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("minute")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
