"""``python -m benchmarks.brokers``: the embedded broker choice by numbers — Tansu (the
default, in memory) against Apache Kafka (KRaft, log dirs on disk), side by side.

For each broker, ``--starts`` times: start on a fresh data dir (Apache Kafka: formatting
the log dirs included) until an AdminClient lists the broker, then (Apache Kafka only:
Tansu keeps nothing) stop and start again on the same dir — the restart of a demo or a
machine. After the last start: the broker's resident memory (RSS, its whole process
tree) idle; ``--events`` clicks produced into ``--partitions`` partitions (events/s) and
read back by one raw consumer (events/s, :mod:`benchmarks.ingest.rawbench`); the RSS and
broker CPU seconds after that load. Ingest through Spark and end-to-end freshness on
either broker: ``python -m benchmarks.ingest --broker kafka`` and ``python -m
benchmarks.freshness --broker kafka``. Appends the table to docs/benchmarks.md; run it on
a quiet machine (about two minutes).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.cpu import cpu_seconds, descendants
from benchmarks.ingest.rawbench import raw_consume
from benchmarks.report import append_section
from icetide.devkit.embedded.kinds import KINDS, Embedded, embedded_broker
from icetide.devkit.gen.clicks import GenOptions, produce_clicks

TOPIC = "broker-bench"


@dataclass
class Figures:
    """One broker's measurements."""

    kind: str
    starts: list[float] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)
    rss_idle_mib: float = 0.0
    produce_rate: float = 0.0
    consume_rate: float = 0.0
    rss_loaded_mib: float = 0.0
    cpu_s: float = 0.0


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.brokers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--starts", type=int, default=3, help="timed starts of each broker")
    p.add_argument("--events", type=int, default=500_000, help="clicks produced and read")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--brokers", default=",".join(KINDS), help="which, comma-separated")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def rss_mib(pid: int | None) -> float:
    """Resident memory of ``pid`` and its descendants, MiB (0 when gone)."""
    total_kib = 0
    for proc in descendants(pid) if pid else []:
        try:
            status = Path(f"/proc/{proc}/status").read_text()
        except OSError:
            continue
        total_kib += sum(int(line.split()[1]) for line in status.splitlines()
                         if line.startswith("VmRSS:"))
    return total_kib / 1024


def timed_start(broker: Embedded) -> float:
    """Seconds from ``start()`` until the broker answers an AdminClient."""
    began = time.perf_counter()
    broker.start()
    return time.perf_counter() - began


def _load(broker: Embedded, figures: Figures, a: argparse.Namespace) -> None:
    figures.rss_idle_mib = rss_mib(broker.pid)
    cpu_before = cpu_seconds(broker.pid or 0)
    gen = produce_clicks(broker.bootstrap, TOPIC,
                         GenOptions(count=a.events, partitions=a.partitions, seed=1))
    figures.produce_rate = gen.rate
    figures.consume_rate = raw_consume(broker.bootstrap, TOPIC, timeout=300.0).rate
    figures.cpu_s = cpu_seconds(broker.pid or 0) - cpu_before
    figures.rss_loaded_mib = rss_mib(broker.pid)


def measure(kind: str, tmp: Path, a: argparse.Namespace) -> Figures:
    """Start ``kind`` ``--starts`` times (and restart it), then load the last one."""
    figures = Figures(kind)
    for i in range(a.starts):
        broker = embedded_broker(kind, tmp / f"{kind}-{i}")
        try:
            figures.starts.append(timed_start(broker))
            if kind == "kafka":  # Tansu keeps nothing: its restart is a first start
                broker.stop()
                figures.restarts.append(timed_start(broker))
            if i == a.starts - 1:
                _load(broker, figures, a)
        finally:
            broker.stop()
    return figures


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s" if values else "— (nothing kept)"


def table(rows: list[Figures], a: argparse.Namespace) -> str:
    lines = [
        f"Command: `python -m benchmarks.brokers --starts {a.starts} --events {a.events} "
        f"--partitions {a.partitions} --brokers {a.brokers}`",
        "",
        "| broker | start (median) | restart, same data (median) | RSS idle | produce "
        "| raw consume | RSS after | broker CPU (produce + consume) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [f"| {f.kind} | {_median(f.starts)} | {_median(f.restarts)} | "
              f"{f.rss_idle_mib:.0f} MiB | {f.produce_rate:,.0f} ev/s | "
              f"{f.consume_rate:,.0f} ev/s | {f.rss_loaded_mib:.0f} MiB | {f.cpu_s:.1f} s |"
              for f in rows]
    lines += ["", "Every start: " + "; ".join(
        f"{f.kind} " + ", ".join(f"{s:.2f}" for s in f.starts) for f in rows) + " (s)."]
    return "\n".join(lines)


def headline(rows: list[Figures]) -> str:
    """Start, idle RSS and produce rate per broker."""
    return "; ".join(f"{f.kind}: start {_median(f.starts)}, RSS {f.rss_idle_mib:.0f} MiB, "
                     f"produce {f.produce_rate:,.0f} ev/s" for f in rows)


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    kinds = [k.strip() for k in a.brokers.split(",") if k.strip()]
    with tempfile.TemporaryDirectory(prefix="icetide-brokers-") as tmp:
        rows = [measure(kind, Path(tmp), a) for kind in kinds]
    body = table(rows, a)
    print(body)
    if not a.no_doc:
        title = "Embedded brokers (benchmarks/brokers)"
        print(f"written to {append_section(title, body, headline=headline(rows))}")


if __name__ == "__main__":
    main()
