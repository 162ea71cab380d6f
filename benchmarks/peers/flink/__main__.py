"""``python -m benchmarks.peers.flink``: seed 001's own engine, Apache Flink, beside icetide,
hop by hop: the seed's three Flink jobs, each beside icetide's flow for the same hop.

``--hops`` picks them (all three by default; each can run alone):

* ``ods`` — Kafka → products lookup → ``ods_behavior.clickevent`` (the seed's
  ``Kafka2Iceberg``) beside icetide's ODS flow. One topic, the same generated clicks
  (1 % malformed): a 20,000-click warm-up, then ``--events`` clicks as a backlog (icetide
  alone, then the Flink job started alone, timed from its first commit), freshness at each
  ``--rates`` for ``--seconds`` (each engine alone in a window of its own, a probe click a
  second), and the row check (both drained, the same rows, every column);
* ``groupby`` — the seed's statistic ``count(uid) … group by productId, name,
  product_price`` over the ODS table read as a stream, into an Iceberg table keyed by
  product, beside icetide's flow ``dws.count_clicks`` (docs/peers.md says why that flow);
  the same phases on the ODS tables the ODS hop filled;
* ``cdc`` — MariaDB ``user_db.user_member`` by ``mysql-cdc`` into the Iceberg upsert table
  (checkpoint ``--cdc-checkpoint``, the seed's 10 s) beside icetide's CDC flow into
  ``dim_db.user_member``: a snapshot of ``--members`` rows, a binlog backlog of
  ``--changes`` updates, freshness at each ``--cdc-rates`` changes/s, the row check.

Each hop's report is a section of its own in docs/benchmarks.md (``--no-doc``: printed
only). PyFlink runs in a venv of its own (``--setup`` makes it): docs/peers.md.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from benchmarks.peers.flink.engine import flink_python, setup_venv
from benchmarks.peers.flink.run import hops, rates, run_hops
from benchmarks.peers.flink.versions import DEFAULT
from benchmarks.report import append_section
from icetide.devkit.embedded.kinds import KINDS
from icetide.errors import RuntimeSetupError


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers.flink", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hops", default="ods,groupby,cdc", help="which hops, comma-separated")
    p.add_argument("--events", type=int, default=1_000_000, help="backlog clicks")
    p.add_argument("--rates", default="2000,20000", help="freshness rates, events/s")
    p.add_argument("--seconds", type=float, default=60.0, help="per freshness rate")
    p.add_argument("--checkpoint", type=float, default=2.0,
                   help="Flink checkpoint (= commit) interval of the ODS and GROUP BY jobs, s "
                        "(the seed: 3)")
    p.add_argument("--trigger", type=float, default=2.0,
                   help="icetide trigger interval of the ODS and GROUP BY flows, s")
    p.add_argument("--members", type=int, default=1_000_000,
                   help="CDC: generated user_member rows (the snapshot)")
    p.add_argument("--changes", type=int, default=1_000_000,
                   help="CDC: member updates in the binlog backlog")
    p.add_argument("--cdc-rates", default="100,1000", help="CDC freshness rates, changes/s")
    p.add_argument("--cdc-checkpoint", type=float, default=10.0,
                   help="CDC: Flink checkpoint and icetide trigger interval, s (the seed: 10)")
    p.add_argument("--parallelism", type=int, default=2, help="Flink (2: local[*] here)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--max-records", type=int, default=500_000, help="icetide, per batch")
    p.add_argument("--broker", choices=KINDS, default="tansu")
    p.add_argument("--flink-python", type=Path, default=None,
                   help="an interpreter with apache-flink (default: the --setup venv)")
    p.add_argument("--setup", action="store_true", help="make the PyFlink venv and stop")
    p.add_argument("--timeout", type=float, default=900.0, help="per wait, s")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if a.setup:
        print(f"PyFlink {DEFAULT.flink}: {setup_venv()}")
        return
    hops(a.hops)
    rates(a.rates)
    rates(a.cdc_rates, "--cdc-rates")
    if a.members < 1 or a.changes < 0:
        raise SystemExit("--members must be at least 1 and --changes at least 0")
    try:
        python = flink_python(a.flink_python)
    except RuntimeSetupError as exc:
        raise SystemExit(str(exc)) from exc

    def report(title: str, body: str) -> None:
        print(f"## {title}\n\n{body}", flush=True)
        if not a.no_doc:
            line = body.rstrip().splitlines()[-1]  # the hop's headline: the body's last line
            print(f"written to {append_section(title, body, headline=line)}", flush=True)

    with tempfile.TemporaryDirectory(prefix="icetide-flink-peer-") as tmp:
        run_hops(a, python, Path(tmp), report)


if __name__ == "__main__":
    main()
