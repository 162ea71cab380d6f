"""``python -m benchmarks.lookup``: the ODS lookup join against a dimension too large to
broadcast, beside the broadcast path on the seed's 9-row table (issue 53, item 5).

Both paths run the example's ODS flow (``examples/clickstream/clickevent.py``, which
looks products up with ``dp.lookup_join``) in this process, one after the other, each
alone in its window, on topics of their own of the same embedded broker:

* **broadcast**: ``dim_db.products``, the seed's 9 rows (clicks carry the seed's 20 ids);
* **keyed**: ``dim_db.items``, ``--rows`` generated products bucketed by ``productId``
  (``--buckets``), clicks over all of them with ``--hot`` of them on product ``0``. The
  flow caches the dimension once, hash-partitioned by ``productId``, and each batch is
  partitioned the same way and merged with it (:mod:`icetide.lake.lookups`): no
  broadcast of the dimension.

Each path: ten seconds' worth of clicks first (its first batch timed: the keyed path's
caches the dimension), then ``--seconds`` of clicks at ``--rate`` with a probe a second;
freshness is a probe's produce → the ODS commit that made it visible, and cores are the
icetide process's CPU (driver, Spark JVM, Python workers) over the window. Afterwards
every target row's product name is compared with the dimension's (a full join).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.lookup.run import ITEMS, SEED_DIM, LookupPath, Window
from benchmarks.report import append_section

TITLE = "Lookup join against a large dimension (benchmarks/lookup)"
PATHS = (LookupPath("broadcast", SEED_DIM, 20, "clicks_seed", "ods_behavior.clickevent"),
         LookupPath("keyed", ITEMS, 0, "clicks_items", "ods_behavior.clickevent_items"))


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lookup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="rows of dim_db.items")
    p.add_argument("--buckets", type=int, default=16, help="dim_db.items' bucket(N, productId)")
    p.add_argument("--hot", type=float, default=0.3, help="share of clicks on product 0")
    p.add_argument("--rate", type=float, default=20_000.0, help="click events/s produced")
    p.add_argument("--seconds", type=float, default=60.0, help="measured window per path")
    p.add_argument("--trigger", type=float, default=2.0, help="trigger interval, seconds")
    p.add_argument("--partitions", type=int, default=4, help="topic partitions")
    p.add_argument("--driver-memory", default="4g", help="the Spark driver's heap")
    p.add_argument("--broadcast-limit", type=int, default=None, metavar="BYTES",
                   help="the keyed path broadcasts dim_db.items only at most BYTES data-file "
                        "bytes (default: icetide's, icetide.lake.lookups.MAX_BYTES; 0: "
                        "never, e.g. to try a small --rows); the seed's table is broadcast")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    a = p.parse_args(argv)
    if a.rows < 1 or a.rate <= 0 or a.seconds <= 0 or not 0 <= a.hot <= 1:
        p.error("--rows >= 1, --rate > 0, --seconds > 0 and --hot within 0..1")
    return a


def _pct(values: list[float | None], q: float) -> str:
    seen = [v for v in values if v is not None]
    return f"{np.percentile(seen, q):.2f} s" if seen else "-"


def body(a: argparse.Namespace, windows: list[Window], items_write_s: float) -> str:
    rows = ["| path | dimension rows | join | clicks/s | freshness p50 | p99 | probes missed | "
            "cores (icetide) | broker cores | batches | first batch | target rows | "
            "names ≠ dimension |", "| --- | ---: | --- |" + " ---: |" * 10]
    for w in windows:
        missed = sum(v is None for v in w.fresh)
        rows.append(
            f"| {w.path.label} ({w.path.dimension}) | {w.dim_rows:,} | {w.join} | "
            f"{w.rate:,.0f} | "
            f"{_pct(w.fresh, 50)} | {_pct(w.fresh, 99)} | {missed} | "
            f"{w.cores.get('icetide', 0):.2f} | {w.cores.get('broker', 0):.2f} | {w.batches} | "
            f"{w.first_batch_s:.1f} s | {w.rows:,} | {w.mismatched:,} |")
    return (f"Command: `python -m benchmarks.lookup --rows {a.rows} --buckets {a.buckets} "
            f"--hot {a.hot:g} --rate {a.rate:g} --seconds {a.seconds:g} --trigger "
            f"{a.trigger:g}" + ("" if a.broadcast_limit is None else
                                f" --broadcast-limit {a.broadcast_limit}")
            + f"`; Spark driver heap {a.driver_memory}. `dim_db.items` written in "
            f"{items_write_s:.1f} s ({a.buckets} buckets). Both paths' clicks put {a.hot:.0%} on "
            f"product 0 and spread the rest over every product id (20 for the seed's table, "
            f"of which it holds 9; every row of dim_db.items).\n\n"
            + "\n".join(rows) + "\n\n`first batch`: the warm-up's first batch, which caches "
            "the dimension (the keyed path: a full read, shuffle and sort of it).")


def headline(windows: list[Window]) -> str:
    parts = [f"{w.path.label} ({w.dim_rows:,} rows): freshness p50/p99 {_pct(w.fresh, 50)} / "
             f"{_pct(w.fresh, 99)}, {w.cores.get('icetide', 0):.2f} cores" for w in windows]
    rate = windows[0].rate if windows else 0
    return f"at {rate:,.0f} clicks/s: " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.lookup.measure import run_paths

    a = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-lookup-") as tmp:
        windows, write_s = run_paths(a, Path(tmp), PATHS)
    text = body(a, windows, write_s)
    print(text)
    if not a.no_doc:
        print(f"wrote {append_section(TITLE, text, headline=headline(windows))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
