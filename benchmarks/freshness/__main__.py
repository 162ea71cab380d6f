"""``python -m benchmarks.freshness``: freshness per layer of the whole clickstream pipeline.

``examples/clickstream`` runs as ``icetide run`` in a process of its own — dimensions by
CDC from a private MariaDB with business updates flowing (2 changes/s), clicks produced at
``--rate`` events/s. Once a second a *probe* click is produced; its freshness per layer is
the time from producing it to the commit that made it visible in ODS
(``ods_behavior.clickevent``), DWD (``dwd.click_wide``) and DWS (``dws.product_views``),
traced through the flows' markers (:mod:`benchmarks.freshness.trace`). The Kafka backlog
(produced − committed to ODS) is sampled every 10 s, to show whether it grows, and the
CPU each process took over the measured window is reported in cores (the pipeline, the
metastore service, the broker, the harness's generators: :mod:`benchmarks.cpu`).

``--compare DIR`` first runs the same measurement with the pipeline process on another
checkout's ``src`` and ``examples/clickstream`` (e.g. a worktree of the commit before the
scheduler), so the report shows before → after from one session on the same machine.
``--compare-trigger S`` does the same for a setting instead of a checkout: the first run
uses a trigger interval (minimum spacing) of ``S`` seconds, the second ``--trigger``; and
``--compare-env KEY=VALUE`` for the pipeline's environment (e.g.
``ICETIDE_SPARK__SHUFFLE_PARTITIONS=2``), which ``--env`` sets for the second run.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.cpu import JVM_PARTS
from benchmarks.freshness.run import Load, RunResult, keep_log, measure
from benchmarks.report import append_section
from icetide.devkit.embedded.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.freshness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=2_000.0, help="click events/s produced")
    p.add_argument("--seconds", type=float, default=120.0, help="measured duration")
    p.add_argument("--trigger", type=float, default=None,
                   help="trigger interval (minimum spacing), seconds; default: the pipeline's")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--warmup", type=float, default=30.0, metavar="S",
                   help="seconds of clicks at --rate before the measured window (steady "
                        "state, not the new pipeline's catch-up); 0: measure from the "
                        "first commit in every layer")
    p.add_argument("--broker", choices=KINDS, default="tansu",
                   help="the embedded broker: tansu (default) or kafka (Apache Kafka, KRaft)")
    p.add_argument("--compare", type=Path, default=None,
                   help="a checkout whose src/ runs the pipeline first, as 'before'")
    p.add_argument("--compare-trigger", type=float, default=None, metavar="S",
                   help="run first with trigger interval S (with --compare: on that checkout)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="environment of the (second) run's pipeline process (repeatable)")
    p.add_argument("--compare-env", action="append", default=[], metavar="KEY=VALUE",
                   help="run first with this pipeline environment instead (repeatable)")
    p.add_argument("--storage", choices=("local", "s3"), default="local",
                   help="the (second) run's lake: the home's disk or an embedded S3 store")
    p.add_argument("--compare-storage", choices=("local", "s3"), default=None,
                   help="run first with the lake on this storage instead")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    p.add_argument("--keep-logs", type=Path, default=None, metavar="DIR",
                   help="copy each run's pipeline log to DIR/<run>.log (where the time went)")
    return p.parse_args(argv)


def _pct(values: list[float | None], q: float) -> str:
    seen = [v for v in values if v is not None]
    return f"{np.percentile(seen, q):.2f}s" if seen else "-"


def _row(label: str, r: RunResult) -> str:
    cells = []
    for layer in ("ODS", "DWD", "DWS"):
        lat = r.freshness[layer]
        missing = sum(v is None for v in lat)
        cells.append(f"{_pct(lat, 50)} / {_pct(lat, 99)}" + (f" ({missing} missing)"
                                                             if missing else ""))
    backlog = " → ".join(f"{b:,}" for b in r.backlog[:: max(1, len(r.backlog) // 6)])
    return f"| {label} | {len(r.probes)} | " + " | ".join(cells) + f" | {backlog} |"


def headline(runs: list[tuple[str, RunResult]]) -> str:
    """DWS p50 / p99 per run, and the last run's p99 against the first's."""
    text = "DWS p50 / p99: " + "; ".join(
        f"{label} {_pct(r.freshness['DWS'], 50)} / {_pct(r.freshness['DWS'], 99)}"
        for label, r in runs)
    first, last = (_p99_seconds(r) for r in (runs[0][1], runs[-1][1]))
    if len(runs) > 1 and first and last:
        text += f" ({last / first:.2f}×)"
    backlog = runs[-1][1].backlog
    grows = len(backlog) > 2 and backlog[-1] > 2 * max(backlog[: len(backlog) // 2] or [0])
    return text + ("; backlog growing" if grows else "; backlog not growing")


def _p99_seconds(r: RunResult) -> float | None:
    done = [v for v in r.freshness["DWS"] if v is not None]
    return float(np.percentile(done, 99)) if done else None


def _minutes(r: RunResult) -> str:
    rows = ["| minute | ODS p99 | DWD p99 | DWS p99 |", "| ---: | ---: | ---: | ---: |"]
    start = r.probes[0].produced_ms if r.probes else 0
    buckets = sorted({(p.produced_ms - start) // 60_000 for p in r.probes})
    for minute in buckets:
        idx = [i for i, p in enumerate(r.probes) if (p.produced_ms - start) // 60_000 == minute]
        cells = [_pct([r.freshness[layer][i] for i in idx], 99) for layer in ("ODS", "DWD", "DWS")]
        rows.append(f"| {minute + 1} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _cores(title: str, columns: Sequence[str], runs: list[tuple[str, RunResult]],
           seconds: Callable[[RunResult], Mapping[str, float]]) -> str:
    """A table of CPU seconds per column over each run's window, in cores."""
    rows = [title, "| run | " + " | ".join(columns) + " |",
            "| --- |" + " ---: |" * len(columns)]
    for label, r in runs:
        cells = [f"{seconds(r).get(c, 0.0) / r.window_s:.2f}" if r.window_s else "-"
                 for c in columns]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _cpu(runs: list[tuple[str, RunResult]]) -> str:
    """CPU per process over the measured window, in cores (2 = the whole machine), then
    the pipeline's Spark JVM by what its threads do."""
    return (_cores("CPU over the measured window, cores (pipeline: its driver, Spark JVM "
                   "and workers; harness: click, probe and business-update generators):\n",
                   ("pipeline", "metastore", "broker", "harness"), runs, lambda r: r.cpu)
            + "\n\n"
            + _cores("The pipeline's Spark JVM by its threads' work, cores (driver threads: "
                     "analysis and planning, job scheduling, Iceberg metadata and commits, "
                     "py4j):\n", JVM_PARTS, runs, lambda r: r.jvm))


def _cadence(runs: list[tuple[str, RunResult]]) -> str:
    """The tables serving no freshness target: commits over the window and the longest
    time without one (the scheduler gives them spare capacity)."""
    tables = list(runs[-1][1].cadence)
    rows = ["Tables with no freshness target: commits in the window / the longest time "
            "without one:\n", "| run | " + " | ".join(f"`{t}`" for t in tables) + " |",
            "| --- |" + " ---: |" * len(tables)]
    for label, r in runs:
        cells = [f"{r.cadence[t][0]} / {r.cadence[t][1]:.0f} s" if t in r.cadence else "-"
                 for t in tables]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _keep_log(home: Path, into: Path | None, label: str) -> None:
    if into is not None:
        keep_log(home, into / f"{label}.log")


def _env(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` items as a mapping; a malformed one stops the run before it starts."""
    bad = [i for i in items if "=" not in i or not i.split("=", 1)[0]]
    if bad:
        raise SystemExit(f"--env/--compare-env {bad[0]!r}: write KEY=VALUE")
    return dict(i.split("=", 1) for i in items)


def _labels(a: argparse.Namespace) -> tuple[str, str]:
    """Names of the first (compared) and second run."""
    if a.compare_storage:
        return f"lake on {a.compare_storage}", f"lake on {a.storage}"
    if a.compare_env:
        return " ".join(a.compare_env), " ".join(a.env) or "default environment"
    if a.compare_trigger is None:
        return "before", "after"
    now = f"trigger {a.trigger:g}s" if a.trigger else "trigger default"
    return f"trigger {a.compare_trigger:g}s", now


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    runs: list[tuple[str, RunResult]] = []
    load = Load(a.rate, a.seconds, a.partitions, a.trigger, env=_env(a.env), storage=a.storage,
                broker=a.broker, warmup=a.warmup)
    first, second = _labels(a)
    with tempfile.TemporaryDirectory(prefix="icetide-fresh-") as tmp:
        if (a.compare is not None or a.compare_trigger is not None or a.compare_env
                or a.compare_storage):
            checkout = a.compare if a.compare is not None else ROOT
            before = replace(load, trigger=a.compare_trigger or a.trigger,
                             env=_env(a.compare_env) if a.compare_env else load.env,
                             storage=a.compare_storage or load.storage)
            runs.append((first, measure(Path(tmp) / "before", before, checkout / "src")))
            _keep_log(Path(tmp) / "before", a.keep_logs, "before")
        runs.append((second if runs else "this tree", measure(Path(tmp) / "after", load,
                                                              ROOT / "src")))
        _keep_log(Path(tmp) / "after", a.keep_logs, "after")
    trig = f" --trigger {a.trigger:g}" if a.trigger else ""
    if a.compare_trigger is not None:
        trig += f" --compare-trigger {a.compare_trigger:g}"
    trig += "".join(f" --env {e}" for e in a.env)
    trig += "".join(f" --compare-env {e}" for e in a.compare_env)
    if a.storage != "local" or a.compare_storage:
        trig += f" --storage {a.storage}" + (f" --compare-storage {a.compare_storage}"
                                             if a.compare_storage else "")
    body = (f"Command: `python -m benchmarks.freshness --rate {a.rate:.0f} --seconds "
            f"{a.seconds:g}{trig} --partitions {a.partitions} --broker {a.broker} --warmup "
            f"{a.warmup:g}{' --compare <checkout>' if a.compare else ''}`: the window starts "
            f"after every layer committed and {a.warmup:g} s of clicks at the rate\n\n"
            "Probe click produced → commit that made it visible, p50 / p99 (whole "
            "clickstream pipeline, CDC dimensions with business updates):\n\n"
            "| run | probes | ODS | DWD | DWS | Kafka backlog over the run (events) |\n"
            "| --- | ---: | ---: | ---: | ---: | --- |\n"
            + "\n".join(_row(label, r) for label, r in runs)
            + "\n\n" + _cpu(runs) + "\n\n" + _cadence(runs)
            + "\n\nPer minute (" + runs[-1][0] + "):\n\n" + _minutes(runs[-1][1]) + "\n")
    print(body)
    if not a.no_doc:
        on = "" if a.broker == "tansu" else " on Apache Kafka"
        title = f"Freshness per layer at {a.rate:,.0f} events/s{on} (benchmarks/freshness)"
        print(f"written to {append_section(title, body, headline=headline(runs))}")


if __name__ == "__main__":
    main()
