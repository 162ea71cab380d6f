"""``python -m benchmarks.cdc.key_filter``: a CDC batch's cost by how its MERGE's key filter
names the batch's keys, a listed ``IN`` or a ``BETWEEN`` range.

The example's CDC flow ``dim_db.user_member`` (Flink peer's CDC hop, :mod:`benchmarks.peers
.flink.ours`) copies ``--members`` generated members from a private MariaDB, takes
``--backlog`` (``ROWSxN``: N batches of ROWS member updates, the table's delete files as
a busy hour leaves them), then the measured ``--batches`` one by one: each is that many
updates, in runs of ``--run`` consecutive members from random places (as the Flink peer's
CDC hop changes them; a single run of 10,000 keys would let a range prune what a random
spread cannot), taken by one batch of the flow. Done twice in one run, each in a session
of its own, with the key filter listing at most ``--limits`` keys (first the old 20,000,
then :data:`icetide.lake.key_filter.IN_LIST_LIMIT`): the batch's wall seconds and its write
phase (changelog + MERGE + commit), the median per size.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import append_section

TITLE = "CDC batches by key filter (benchmarks/cdc/key_filter)"


def _args(argv: list[str] | None) -> argparse.Namespace:
    from icetide.lake.key_filter import IN_LIST_LIMIT

    p = argparse.ArgumentParser(prog="python -m benchmarks.cdc.key_filter", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--members", type=int, default=1_000_000)
    p.add_argument("--backlog", default="100000x3", help="ROWSxN updates before measuring")
    p.add_argument("--batches", default="100x3,300x3,1000x3,10000x3", help="ROWSxN measured")
    p.add_argument("--run", type=int, default=100,
                   help="measured updates come as runs of this many consecutive members, "
                        "each from a random member (1: every key random)")
    p.add_argument("--limits", default=f"20000,{IN_LIST_LIMIT}", help="IN-list limits compared")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # a child's limit
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def sizes(spec: str) -> list[int]:
    """``"100x3,1000x2"`` → ``[100, 100, 100, 1000, 1000]``."""
    out: list[int] = []
    for part in spec.split(","):
        rows, _, times = part.partition("x")
        out.extend([int(rows)] * int(times or 1))
    return out


def _measure(a: argparse.Namespace, limit: int) -> list[dict[str, float]]:
    """The measured batches of one session whose key filter lists at most ``limit`` keys."""
    from benchmarks.peers.flink.cdc_load import change_members, fill_members, patient_server
    from benchmarks.peers.flink.ours import MEMBERS, cdc_pipeline
    from icetide.config import CatalogConfig, Settings
    from icetide.devkit.demo.shop import shop_database
    from icetide.engine.run import PipelineRun
    from icetide.flows.loop import FlowLoop
    from icetide.lake import key_filter
    from icetide.pipelines import load_pipeline
    from icetide.runtime.session import get_spark, stop_spark

    key_filter.IN_LIST_LIMIT = limit
    home = Path(tempfile.mkdtemp(prefix="icetide-bench-keys-"))
    settings = Settings(home=home, catalog=CatalogConfig(name="lake", type="hadoop"))
    spark, out, first = get_spark(settings), [], 0
    rng = random.Random(7)
    with shop_database(settings, None) as shop:
        with shop.connect() as conn:
            patient_server(conn)
            fill_members(conn, a.members)
        graph = load_pipeline(cdc_pipeline(home / "pipeline", 10, shop))
        with PipelineRun(spark, settings, graph, only=[MEMBERS]) as run:
            flow = run.compile(run.flows[0])
            FlowLoop(spark, flow).run_until_caught_up()
            for n, measured in [(n, False) for n in sizes(a.backlog)] + [
                    (n, True) for n in sizes(a.batches)]:
                with shop.connect() as conn:
                    if measured:  # runs of --run members from random places (seeded)
                        for at in range(0, n, a.run):
                            change_members(conn, min(a.run, n - at), a.members,
                                           rng.randrange(a.members))
                    else:
                        change_members(conn, n, a.members, first)
                first += n
                for r in FlowLoop(spark, flow).run_until_caught_up():
                    if measured:
                        out.append({"rows": n, "seconds": r.seconds,
                                    "write": r.phases.get("write", 0.0)})
    stop_spark()
    return out


def _table(runs: dict[int, list[dict[str, float]]]) -> str:
    limits = list(runs)
    head = "| update rows per batch | " + " | ".join(
        f"≤ {lim:,} listed: batch / write s" for lim in limits) + " |\n"
    rows = sorted({int(b["rows"]) for bs in runs.values() for b in bs})
    body = ""
    for n in rows:
        cells = []
        for lim in limits:
            got = [b for b in runs[lim] if b["rows"] == n]
            cells.append(f"{statistics.median(b['seconds'] for b in got):.2f} / "
                         f"{statistics.median(b['write'] for b in got):.2f}" if got else "–")
        body += f"| {n:,} | " + " | ".join(cells) + " |\n"
    return head + "| ---: |" + " ---: |" * len(limits) + "\n" + body


def headline(runs: dict[int, list[dict[str, float]]]) -> str:
    """Batch seconds of the last limit against the first, per batch size."""
    first, last = next(iter(runs)), list(runs)[-1]

    def median(limit: int, n: int) -> float | None:
        got = [b["seconds"] for b in runs[limit] if b["rows"] == n]
        return statistics.median(got) if got else None

    parts = []
    for n in sorted({int(b["rows"]) for b in runs[last]}):
        old, new = median(first, n), median(last, n)
        if old and new:
            parts.append(f"{n:,} rows {new / old:.2f}×")
    return (f"CDC batch seconds, at most {last:,} keys listed against {first:,}: "
            + ", ".join(parts))


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    logging.basicConfig(level=logging.WARNING)
    if a.one is not None:  # a child: one session, its batches as JSON on stdout
        print(json.dumps(_measure(a, a.one)))
        return
    runs: dict[int, list[dict[str, float]]] = {}
    began = time.time()
    for limit in [int(x) for x in a.limits.split(",")]:
        child = [sys.executable, "-m", "benchmarks.cdc.key_filter", "--one", str(limit),
                 "--members", str(a.members), "--backlog", a.backlog, "--batches", a.batches,
                 "--run", str(a.run)]
        done = subprocess.run(child, check=True, capture_output=True, text=True)
        runs[limit] = json.loads(done.stdout.strip().splitlines()[-1])
    body = (f"Command: `python -m benchmarks.cdc.key_filter --members {a.members} --backlog "
            f"{a.backlog} --batches {a.batches} --run {a.run} --limits {a.limits}` "
            f"({time.time() - began:.0f} s)"
            "\n\nMedian per batch size, each limit in a session of its own:\n\n" + _table(runs))
    print(body + "\n" + headline(runs))
    if not a.no_doc:
        line = headline(runs)
        print(f"written to {append_section(TITLE, body + chr(10) + line + chr(10), headline=line)}")


if __name__ == "__main__":
    main()
