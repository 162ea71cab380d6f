"""``python -m benchmarks.hops``: where one batch's time goes, per hop of the clickstream.

The hops of ``examples/clickstream`` (dimensions by CDC from a private MariaDB) each run
single batches through the real flow loop, at ``--small`` (1) and ``--large`` (25,000)
new events:

* ODS append — Kafka → ``ods_behavior.clickevent`` (+ dead letters);
* DWD append with dimension joins — ``dwd.click_wide``;
* DWS aggregation MERGEs — ``dws.product_user`` (with its changelog), ``dws.product_views``
  (``count_views_uv``: a small copy-on-write table, written whole), ``dws.user_activity``
  (with its changelog) and ``dws.user_profile`` (``profile_activity``, partial update);
* CDC MERGE — MariaDB ``user_db.products`` → ``dim_db.products`` (price updates).

Per hop: the batch's wall time, its phases (``position``: marker reads = catalog and
metadata I/O, ``plan``, ``transform``, ``check``: the rows/event-time pass, ``dead_letters``,
``write``: write + commit) and the Spark jobs it started (``BatchResult.phases`` /
``.jobs``, :mod:`icetide.flows.timing`); the median of ``--repeat`` batches.

``--compare DIR`` runs the same profile in a subprocess on another checkout's ``src``
(e.g. a worktree of the commit before an optimisation) first, so both profiles come from
one run on the same machine state and the tables show before → after side by side (wall
time and jobs per batch; CPU-ms per part of a large batch).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.hops.cpu_parts import cpu_compare, cpu_table
from benchmarks.hops.profile import HOPS, profile
from benchmarks.report import append_section

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.hops", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", type=int, default=1, help="events of the small batches")
    p.add_argument("--large", type=int, default=25_000, help="events of the large batches")
    p.add_argument("--repeat", type=int, default=3, help="batches per hop and size")
    p.add_argument("--compare", type=Path, default=None,
                   help="a checkout (worktree) whose src/ is profiled first, as 'before'")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark conf for the profiled session (repeatable)")
    p.add_argument("--json", action="store_true", help="print the profile as JSON only")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


Profile = dict[str, dict[str, dict[str, float]]]  # hop → size → figure → value


def _before(checkout: Path, a: argparse.Namespace) -> Profile:
    env = {**os.environ, "PYTHONPATH": f"{checkout / 'src'}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.hops", "--json", "--small", str(a.small),
         "--large", str(a.large), "--repeat", str(a.repeat),
         *[arg for item in a.conf for arg in ("--conf", item)]],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    profile_: Profile = json.loads(out.stdout.strip().splitlines()[-1])
    return profile_


def _fmt(figures: dict[str, float]) -> str:
    phases = ", ".join(f"{k} {v:.2f}" for k, v in figures.items()
                       if k not in ("seconds", "jobs") and not k.startswith("cpu ")
                       and v >= 0.005)
    return f"**{figures['seconds']:.2f}s**, {figures['jobs']:.0f} jobs ({phases})"


def _table(after: Profile, before: Profile | None, sizes: tuple[int, int]) -> str:
    head = "| hop | events | " + ("before | after | ratio |" if before else "batch |")
    rows = [head, "| --- | ---: | " + ("--- | --- | ---: |" if before else "--- |")]
    for hop in HOPS:
        for size in sizes:
            now = after[hop][str(size)]
            if before is None:
                rows.append(f"| {hop} | {size:,} | {_fmt(now)} |")
                continue
            then = before[hop][str(size)]
            rows.append(f"| {hop} | {size:,} | {_fmt(then)} | {_fmt(now)} | "
                        f"{now['seconds'] / then['seconds']:.2f} |")
    return "\n".join(rows)


def _compared(before: Profile | None, after: Profile, size: int) -> str:
    """Before → after CPU-ms of one batch of ``size`` events per hop ("" alone)."""
    if before is None:
        return ""
    large = str(size)
    return (f"\nCPU-ms of one batch of {size:,} events, before → after (median):\n\n"
            + cpu_compare({h: before[h][large] for h in HOPS if h in before},
                          {h: after[h][large] for h in HOPS}) + "\n")


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    before = _before(a.compare, a) if a.compare is not None else None
    with tempfile.TemporaryDirectory(prefix="icetide-hops-") as tmp:
        conf = dict(item.split("=", 1) for item in a.conf)
        after = profile(Path(tmp), (a.small, a.large), a.repeat, conf)
    if a.json:
        print(json.dumps(after))
        return
    body = (f"Command: `python -m benchmarks.hops --small {a.small} --large {a.large} "
            f"--repeat {a.repeat}{' --compare <checkout>' if before else ''}`\n\n"
            "Median batch per hop (wall seconds; Spark jobs; seconds per phase):\n\n"
            + _table(after, before, (a.small, a.large)) + "\n\n"
            f"CPU-ms of one batch of {a.large:,} events per part and phase (median; the "
            "JVM's split into tasks and the rest is per batch only):\n\n"
            + cpu_table({hop: after[hop][str(a.large)] for hop in HOPS}) + "\n"
            + _compared(before, after, a.large))
    print(body)
    if not a.no_doc:
        print(f"written to {append_section('Batch cost per hop (benchmarks/hops)', body)}")


if __name__ == "__main__":
    main()
