"""``python -m benchmarks.restart``: after a kill -9, how long until the pipeline commits.

One home runs ``examples/clickstream`` (``icetide -v run``, CDC dimensions from a private
MariaDB with 2 business changes/s, clicks at ``--rate`` on the embedded broker, for the
whole run). After a first start on the new lake (not counted), the pipeline is killed
(-9, its process tree; the metastore service stays up, as in a deployment) and started
again ``--restarts`` times; each restart is timed from spawning the process to the
first new commit of ODS (``ods_behavior.clickevent``), then of DWD and DWS, read from
the tables' snapshots. Where the time went comes from the pipeline's own ``startup
phase`` log lines (:mod:`icetide.runtime.startup`, :mod:`benchmarks.restart.phases`).

``--compare DIR`` alternates the restarts between another checkout's ``src`` (first,
"before") and this tree ("after") on the same lake and data, so both see the same load.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.report import append_section
from benchmarks.restart.phases import (
    Restart,
    batch_table,
    cpu_table,
    headline,
    layer_table,
    step_table,
)
from benchmarks.restart.run import CAUGHT_UP, Plan, measure

ROOT = Path(__file__).resolve().parents[2]
TITLE = "Restart after kill -9 (benchmarks/restart)"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.restart", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--restarts", type=int, default=5, help="restarts measured per tree")
    p.add_argument("--rate", type=float, default=2_000.0, help="click events/s produced")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--outage", type=float, default=0.0,
                   help="seconds the pipeline stays down after each kill (a backlog of "
                        "rate x outage clicks waits for the restart)")
    p.add_argument("--compare", type=Path, default=None,
                   help="a checkout whose src/ runs every other restart, as 'before'")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def report(runs: dict[str, list[Restart]], command: str) -> str:
    """The section's body: time to the first commit per layer, then where it went."""
    return (f"Command: `{command}`\n\n"
            "Spawn of the restarted `icetide run` → its first new commit per layer "
            "(median, min–max over the restarts):\n\n"
            + layer_table(runs, ("ODS", "DWD", "DWS", CAUGHT_UP))
            + f"\n\n`{CAUGHT_UP}`: the first ODS commit whose newest click is at most 10 s old "
            "when committed (the backlog is caught up)"
            + "\n\nWhere the time to the first ODS commit went, per step (median seconds "
            "and share; a step that overlapped the ones before it counts 0):\n\n"
            + step_table(runs)
            + "\n\nThe first ODS batch's own phases (median seconds):\n\n"
            + batch_table(runs)
            + "\n\nWhere the CPU of the way to the first ODS commit went: the pipeline's "
            "processes from the spawn on, per part (median CPU seconds; the JVM by its "
            "threads, `benchmarks/restart/cpu_timeline.py`):\n\n"
            + cpu_table(runs) + "\n")


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    trees = {"this tree": ROOT / "src"}
    if a.compare is not None:
        trees = {"before": a.compare.resolve() / "src", "after": ROOT / "src"}
    plan = Plan(trees, a.restarts, a.rate, a.partitions, outage=a.outage)
    with tempfile.TemporaryDirectory(prefix="icetide-restart-") as tmp:
        restarts = measure(Path(tmp) / "home", plan)
    runs = {tree: [r for r in restarts if r.tree == tree] for tree in trees}
    command = (f"python -m benchmarks.restart --restarts {a.restarts} --rate {a.rate:.0f} "
               f"--partitions {a.partitions}" + (f" --outage {a.outage:g}" if a.outage else "")
               + (" --compare <checkout>" if a.compare else ""))
    body = report(runs, command)
    print(headline(runs))
    print(body)
    if not a.no_doc:
        print(f"written to {append_section(TITLE, body, headline=headline(runs))}")


if __name__ == "__main__":
    main()
