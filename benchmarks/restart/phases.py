"""Where a restart's time goes: the pipeline's ``startup phase`` log lines, as steps.

``icetide -v run`` logs one line per startup phase when it ends
(:mod:`icetide.runtime.startup`): ``startup phase spark_session at 1764240000.123
(+4.21s)``. A restart's steps are the canonical phases below in the order a sequential
start reaches them; each step's time is its end minus the latest end of the steps before
it (0 when it ended earlier: it overlapped them), so the steps on the way add up to the
time to the first ODS commit. A step that ended only after the ODS flow's first batch
had started (the other flows compiled while it ran) was not on that way: it is shown as
overlapping the batch, not counted. Pure: no I/O.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

LINE = re.compile(r"startup phase (?P<name>.+?) at (?P<at>\d+(?:\.\d+)?) \(")

#: The ODS flow of examples/clickstream: its first commit ends a restart's cold start.
ODS_FLOW = "ods_behavior.clickevent"

#: (phase that ends the step, what the step is), in the order a sequential start runs them.
STEPS: tuple[tuple[str, str], ...] = (
    ("cli", "Python start, imports, the run command"),
    ("pipeline_loaded", "pipeline files loaded"),
    ("java_checked", "Java found and checked"),
    ("jars_listed", "jars / class path listed (cached manifest)"),
    ("catalog_service", "metastore service found running"),
    ("python_env", "executors' Python environment"),
    ("class_archive", "the class archive looked up (jar stats)"),
    ("jvm_started", "spark-submit launcher until the driver JVM starts"),
    ("spark_context", "driver JVM boot until the SparkContext starts"),
    ("spark_session", "SparkContext and SparkSession"),
    ("sources", "sources built (Kafka, MySQL clients)"),
    ("leases", "flow leases taken"),
    ("catalog_connected", "first catalog statement (metastore connect)"),
    (f"compiled {ODS_FLOW}", "flows compiled until the ODS flow is (analysis, DDL)"),
    ("flows_compiled", "the remaining flows compiled (analysis, DDL, CDC schemas)"),
    ("maintenance_schedule", "maintenance schedule"),
    ("scheduler", "scheduler started"),
    ("python_workers", "Python workers started ahead (background)"),
    (f"first_batch {ODS_FLOW}", "until the ODS flow's first batch starts"),
    (f"first_commit {ODS_FLOW}", "first ODS batch, to its commit"),
)
#: A step that ended after this one had (the ODS batch started) overlapped that batch.
ON_THE_WAY = f"first_batch {ODS_FLOW}"


def parse(log: str) -> dict[str, float]:
    """Phase name → epoch seconds it ended (the first line per name)."""
    found: dict[str, float] = {}
    for match in LINE.finditer(log):
        found.setdefault(match["name"], float(match["at"]))
    return found


def step_seconds(ends: Mapping[str, float], spawned: float,
                 steps: Sequence[tuple[str, str]] = STEPS) -> dict[str, float | None]:
    """Seconds per step of one restart spawned at ``spawned`` (epoch): each present
    step's end minus the latest end before it, never negative; ``None`` for a step that
    ended after the ODS batch started (it overlapped the batch); absent steps are left
    out."""
    out: dict[str, float | None] = {}
    latest = spawned
    batch_start = ends.get(ON_THE_WAY)
    for name, _ in steps:
        if name not in ends:
            continue
        if (batch_start is not None and ends[name] > batch_start
                and name != ON_THE_WAY and not name.startswith("first_commit ")):
            out[name] = None
            continue
        out[name] = max(0.0, ends[name] - latest)
        latest = max(latest, ends[name])
    return out


@dataclass
class Restart:
    """One kill -9 and restart: when the new process was spawned, its phases, and the
    first new commit per layer (epoch seconds; absent: none within the timeout)."""

    tree: str
    spawned: float
    phases: dict[str, float] = field(default_factory=dict)
    first_commit: dict[str, float] = field(default_factory=dict)
    #: the first ODS batch's own phases (position, plan, transform, …), seconds
    batch: dict[str, float] = field(default_factory=dict)
    #: CPU seconds per part from the spawn to the first ODS commit
    #: (:mod:`benchmarks.restart.cpu_timeline`)
    cpu: dict[str, float] = field(default_factory=dict)

    def to_commit(self, layer: str) -> float | None:
        """Seconds from spawn to the layer's first new commit."""
        at = self.first_commit.get(layer)
        return None if at is None else at - self.spawned

    def steps(self) -> dict[str, float | None]:
        return step_seconds(self.phases, self.spawned)


#: The first-commit line's count of the events the batch read (the rest are seconds).
ROWS_IN = "rows_in"


def batch_detail(log: str, flow: str = ODS_FLOW) -> dict[str, float]:
    """The ``key=value`` phases logged with a flow's first commit."""
    match = re.search(rf"startup phase first_commit {re.escape(flow)} at \S+ \(\S+\)(.*)", log)
    if match is None:
        return {}
    pairs = (item.split("=", 1) for item in match[1].split() if "=" in item)
    return {k: float(v) for k, v in pairs}


def median(values: Sequence[float | None]) -> float | None:
    seen = [v for v in values if v is not None]
    return statistics.median(seen) if seen else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def layer_table(runs: Mapping[str, Sequence[Restart]], layers: Sequence[str]) -> str:
    """Per tree: spawn → first new commit per layer, median (min–max) over its restarts."""
    rows = ["| tree | restarts | " + " | ".join(f"to first {layer} commit" for layer in layers)
            + " |", "| --- | ---: |" + " ---: |" * len(layers)]
    for tree, restarts in runs.items():
        cells = []
        for layer in layers:
            times = [r.to_commit(layer) for r in restarts]
            seen = [t for t in times if t is not None]
            spread = f" ({min(seen):.1f}–{max(seen):.1f})" if len(seen) > 1 else ""
            missing = len(times) - len(seen)
            cells.append(f"{_fmt(median(times))} s{spread}"
                         + (f", {missing} none" if missing else ""))
        rows.append(f"| {tree} | {len(restarts)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def step_table(runs: Mapping[str, Sequence[Restart]]) -> str:
    """Per step: median seconds and share of the time to the first ODS commit, per tree."""
    trees = list(runs)
    head = "| step | " + " | ".join(f"{t}: s (share)" for t in trees) + " |"
    rows = [head, "| --- |" + " ---: |" * len(trees)]
    medians = {t: _step_medians(runs[t]) for t in trees}
    totals = {t: sum(v for v in medians[t].values() if v is not None) for t in trees}
    for name, label in STEPS:
        if all(name not in medians[t] for t in trees):
            continue
        cells = []
        for t in trees:
            value = medians[t].get(name)
            share = f" ({value / totals[t]:.0%})" if value is not None and totals[t] else ""
            overlapped = name in medians[t] and value is None
            cells.append("overlapped the batch" if overlapped else f"{_fmt(value)}{share}")
        rows.append(f"| {label} (`{name}`) | " + " | ".join(cells) + " |")
    rows.append("| **sum of the step medians** | " + " | ".join(
        f"**{totals[t]:.2f}**" for t in trees) + " |")
    return "\n".join(rows)


def _step_medians(restarts: Sequence[Restart]) -> dict[str, float | None]:
    """Per step, the median over the restarts on whose way it was (``None``: it
    overlapped the first ODS batch in most restarts)."""
    per = [r.steps() for r in restarts]
    out: dict[str, float | None] = {}
    for name in (n for n, _ in STEPS if any(n in p for p in per)):
        on_way = [v for p in per if (v := p.get(name)) is not None]
        off_way = sum(name in p and p[name] is None for p in per)
        out[name] = None if off_way > len(on_way) else statistics.median(
            [*on_way, *[0.0] * (len(per) - len(on_way) - off_way)] or [0.0])
    return out


def batch_table(runs: Mapping[str, Sequence[Restart]]) -> str:
    """The first ODS batch's own phases, median seconds per tree."""
    trees = list(runs)
    names = sorted({k for rs in runs.values() for r in rs for k in r.batch})
    rows = ["| first ODS batch phase | " + " | ".join(trees) + " |",
            "| --- |" + " ---: |" * len(trees)]
    for name in names:
        values = [median([r.batch.get(name) for r in runs[t]]) for t in trees]
        if name == ROWS_IN:  # a count, not seconds
            rows.append("| events it read (count) | " + " | ".join(
                "-" if v is None else f"{v:,.0f}" for v in values) + " |")
            continue
        rows.append(f"| {name} | " + " | ".join(_fmt(v) for v in values) + " |")
    return "\n".join(rows)


def cpu_table(runs: Mapping[str, Sequence[Restart]]) -> str:
    """CPU seconds per part on the way to the first ODS commit, median per tree, with
    each part's share, and the cores the way kept busy (all CPU over its seconds)."""
    trees = list(runs)
    parts = list(dict.fromkeys(k for rs in runs.values() for r in rs for k in r.cpu))
    medians = {t: {p: median([r.cpu.get(p) for r in runs[t]]) or 0.0 for p in parts}
               for t in trees}
    totals = {t: sum(medians[t].values()) for t in trees}
    rows = ["| part | " + " | ".join(f"{t}: CPU-s (share)" for t in trees) + " |",
            "| --- |" + " ---: |" * len(trees)]
    for part in parts:
        rows.append(f"| {part} | " + " | ".join(
            f"{medians[t][part]:.2f} ({medians[t][part] / totals[t]:.0%})" if totals[t]
            else "-" for t in trees) + " |")
    rows.append("| **all** | " + " | ".join(f"**{totals[t]:.2f}**" for t in trees) + " |")
    ways = {t: median([r.to_commit("ODS") for r in runs[t]]) for t in trees}
    rows.append("| cores busy on the way | " + " | ".join(
        f"{totals[t] / way:.2f}" if way else "-" for t, way in ways.items()) + " |")
    return "\n".join(rows)


def headline(runs: Mapping[str, Sequence[Restart]], target_s: float = 8.0) -> str:
    """One line: the median time to the first ODS commit after kill -9, per tree."""
    parts = []
    for tree, restarts in runs.items():
        value = median([r.to_commit("ODS") for r in restarts])
        parts.append(f"{tree} {_fmt(value)} s")
    return ("restart after kill -9 → first ODS commit, median over the restarts: "
            + " → ".join(parts) + f" (target ≤ {target_s:g} s on a quiet machine)")
