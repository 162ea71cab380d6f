"""``python -m benchmarks.peers.flink``: seed 001's own engine, Apache Flink, beside icetide.

One run, one topic, the same generated clicks (1 % malformed) for both:

1. warm-up: 20,000 clicks; icetide's ODS flow (``examples/clickstream``, in this process
   as ``benchmarks.ingest`` runs it) catches up on them;
2. backlog: ``--events`` more clicks; icetide catches up on them (timed, CPU); then the
   Flink job (``job.py``: seed 001's Flink SQL, Kafka → products lookup → Iceberg,
   checkpoint = commit every ``--checkpoint`` s) starts on the whole topic and is timed
   from its first commit to the one holding every valid click (its start-up left out);
3. freshness at each ``--rates`` for ``--seconds``: both run continuously on the same
   clicks with one probe click a second; per engine, probe produced → the commit that
   made it visible (icetide: its markers, :mod:`benchmarks.freshness.trace`; Flink: the
   snapshot that added the probe's row). Both share the machine in this phase;
4. row check: both drained, icetide's ``ods_behavior.clickevent`` and the peer's
   ``clickevent`` must hold the same rows (counts, keys, every column).

PyFlink runs in a venv of its own (``--setup`` makes it): docs/peers.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.peers.flink.engine import (
    flink_python,
    peer_jars,
    setup_venv,
    start_job,
)
from benchmarks.peers.flink.measure import (
    TOPIC,
    Engines,
    Freshness,
    RowCheck,
    Throughput,
    flink_backlog,
    freshness,
    icetide_backlog,
    icetide_flow,
    row_check,
)
from benchmarks.peers.flink.sql import JobOptions
from benchmarks.peers.flink.versions import DEFAULT
from benchmarks.report import append_section
from icetide.config import CatalogConfig, KafkaConfig, MetastoreConfig, Settings, SparkConfig
from icetide.devkit.embedded.kinds import KINDS, embedded_broker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.errors import RuntimeSetupError
from icetide.flows.loop import FlowLoop

TITLE = "Flink peer (benchmarks/peers/flink)"
WARMUP = 20_000
BAD_RATIO = 0.01


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers.flink", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=1_000_000, help="backlog clicks")
    p.add_argument("--rates", default="2000,20000", help="freshness rates, events/s")
    p.add_argument("--seconds", type=float, default=60.0, help="per freshness rate")
    p.add_argument("--checkpoint", type=float, default=2.0,
                   help="Flink checkpoint (= commit) interval, s (the seed: 3)")
    p.add_argument("--trigger", type=float, default=2.0,
                   help="icetide trigger interval, s (the pipeline's default)")
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


def rates(text: str) -> list[float]:
    try:
        found = [float(r) for r in text.split(",") if r.strip()]
    except ValueError:
        found = []
    if not found or any(r <= 0 for r in found):
        raise SystemExit(f"--rates {text!r}: write events/s > 0, comma-separated, e.g. 2000,20000")
    return found


def _pct(values: list[float | None], q: float) -> float | None:
    seen = [v for v in values if v is not None]
    return float(np.percentile(seen, q)) if seen else None


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def headline(ours: Throughput, theirs: Throughput | None, windows: list[Freshness],
             check: RowCheck) -> str:
    """One line: icetide's figures as multiples of Flink's (events/s: higher is better;
    CPU and freshness: lower is better)."""
    parts = []
    if theirs is not None:
        parts.append(f"events/s {_ratio(ours.rate, theirs.rate)}×, CPU-s per 1M "
                     f"{_ratio(ours.cpu_per_million(), theirs.cpu_per_million())}×")
    for w in windows:
        ice, flink = _pct(w.icetide, 50), _pct(w.flink, 50)
        parts.append(f"freshness p50 at {w.rate:,.0f}/s {_ratio(ice, flink)}× "
                     f"({_s(ice)} vs {_s(flink)})")
    parts.append("same rows" if check.same else "ROWS DIFFER")
    return f"icetide vs Flink {DEFAULT.flink} (seed 001's job): " + "; ".join(parts)


def _throughput_table(ours: Throughput, theirs: Throughput | None) -> str:
    def row(name: str, t: Throughput | None) -> str:
        if t is None:
            return f"| {name} | - | - | - | - (backlog within the first checkpoint) |"
        return (f"| {name} | {t.rows:,} | {t.seconds:.1f} s | {t.rate:,.0f} "
                f"| {t.cpu_per_million():.1f} |")
    return "\n".join(["| engine | valid events timed | seconds | events/s | CPU-s per 1M |",
                      "| --- | ---: | ---: | ---: | ---: |", row("icetide (Spark)", ours),
                      row(f"Flink {DEFAULT.flink}", theirs)])


def _fresh_table(windows: list[Freshness]) -> str:
    rows = ["| events/s | probes: icetide / Flink | icetide p50 / p99 | Flink p50 / p99 "
            "| cores: icetide / Flink / broker |", "| ---: | ---: | ---: | ---: | ---: |"]
    for w in windows:
        missing = [sum(v is None for v in lat) for lat in (w.icetide, w.flink)]
        note = f" ({missing[0]}/{missing[1]} missing)" if any(missing) else ""
        rows.append(f"| {w.rate:,.0f} | {len(w.probes)} / {len(w.flink_probes)}{note} "
                    f"| {_s(_pct(w.icetide, 50))} / {_s(_pct(w.icetide, 99))} "
                    f"| {_s(_pct(w.flink, 50))} / {_s(_pct(w.flink, 99))} "
                    f"| {w.cores['icetide']:.2f} / {w.cores['flink']:.2f} "
                    f"/ {w.cores['broker']:.2f} |")
    return "\n".join(rows)


def _body(a: argparse.Namespace, ours: Throughput, theirs: Throughput | None,
          windows: list[Freshness], check: RowCheck) -> str:
    p = DEFAULT
    return f"""Command: `python -m benchmarks.peers.flink --events {a.events} --rates {a.rates} \
--seconds {a.seconds:g} --checkpoint {a.checkpoint:g} --trigger {a.trigger:g} --parallelism \
{a.parallelism} --partitions {a.partitions} --broker {a.broker}`

Peer: Apache Flink {p.flink} (PyFlink, local mini cluster, parallelism {a.parallelism}), \
iceberg-flink-runtime {p.iceberg}, flink-connector-kafka {p.kafka_connector}, products by a \
JDBC lookup ({p.jdbc_connector}) on MariaDB; checkpoint = commit every {a.checkpoint:g} s. \
icetide: the clickstream ODS flow, trigger {a.trigger:g} s. Same topic, same clicks \
({BAD_RATIO:.0%} malformed). How it is built: docs/peers.md.

Backlog ({a.events:,} clicks after a {WARMUP:,}-click warm-up; icetide alone, then Flink \
alone from its first commit):

{_throughput_table(ours, theirs)}

Freshness (probe produced → commit that made it visible): each engine alone in a window \
of its own at the rate — icetide with Flink's processes stopped (SIGSTOP), then Flink \
with icetide idle, each caught up first; cores are each engine's own in its window:

{_fresh_table(windows)}

Row check: {check.expected:,} valid clicks produced; icetide {check.icetide:,} rows, \
Flink {check.flink:,} rows; keys only in icetide {check.only_icetide}, only in Flink \
{check.only_flink}; every column of every row equal: {'yes' if check.same else 'NO'}.

{headline(ours, theirs, windows, check)}
"""


def _run(a: argparse.Namespace, python: Path, tmp: Path) -> str:
    from icetide.devkit.demo.shop import shop_database
    from icetide.runtime.catalogs import pyiceberg_catalog
    from icetide.runtime.metastore.service import stop_metastore

    with embedded_broker(a.broker, tmp / "broker") as broker:
        bs = broker.bootstrap
        settings = Settings(home=tmp / "home", spark=SparkConfig(driver_memory="4g"),
                            catalog=CatalogConfig(), metastore=MetastoreConfig(port=free_port()),
                            kafka=KafkaConfig(bootstrap=bs,
                                              max_records_per_trigger=a.max_records))
        os.environ["ICETIDE_METASTORE__PORT"] = str(settings.metastore.port)
        jars = peer_jars(settings)
        valid = produce_clicks(bs, TOPIC, GenOptions(count=WARMUP, partitions=a.partitions,
                                                     bad_ratio=BAD_RATIO, seed=1)).valid
        spark, flow = icetide_flow(settings)
        FlowLoop(spark, flow).run_until_caught_up()
        valid += produce_clicks(bs, TOPIC, GenOptions(
            count=a.events, partitions=a.partitions, bad_ratio=BAD_RATIO, seed=2)).valid
        ours = icetide_backlog(spark, flow)
        with shop_database(settings, None) as shop:
            info = shop.info
            job = start_job(python, JobOptions(
                bs, TOPIC, str(tmp / "flink" / "warehouse"),
                f"jdbc:mysql://{info.host}:{info.port}/{shop.database}", info.app_user,
                info.app_password, a.checkpoint, a.parallelism), jars, tmp / "flink")
            try:
                theirs = flink_backlog(job, valid, a.timeout)
                e = Engines(spark, flow, job, pyiceberg_catalog(settings), bs, broker.pid)
                windows: list[Freshness] = []
                for i, rate in enumerate(rates(a.rates)):
                    windows.append(freshness(e, rate, a.seconds, a.trigger, 3 + i, valid))
                    valid += windows[-1].produced
                check = row_check(e, valid, a.timeout)
            finally:
                job.stop()
        stop_metastore(settings)
    return _body(a, ours, theirs, windows, check)


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if a.setup:
        print(f"PyFlink {DEFAULT.flink}: {setup_venv()}")
        return
    rates(a.rates)
    try:
        python = flink_python(a.flink_python)
    except RuntimeSetupError as exc:
        raise SystemExit(str(exc)) from exc
    with tempfile.TemporaryDirectory(prefix="icetide-flink-peer-") as tmp:
        body = _run(a, python, Path(tmp))
    print(body)
    if not a.no_doc:
        line = body.rstrip().splitlines()[-1]  # headline(...): the body's last line
        print(f"written to {append_section(TITLE, body, headline=line)}")


if __name__ == "__main__":
    main()
