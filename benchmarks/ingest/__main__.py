"""``python -m benchmarks.ingest``: Kafka ingest, side by side on one topic in one run.

(a) raw confluent-kafka consume + orjson decode in one process — the source's ceiling;
(b) icetide: Kafka → ``ods_behavior.clickevent`` (examples/clickstream, Spark + Iceberg),
    once per reader of ``--readers`` (``kafka.reader``: ``jvm``, Spark's Kafka source;
    ``python``, confluent-kafka tasks), each over its own ``--events`` new events;
(c) a pyiceberg-only Python ingester doing the same job without Spark;
plus freshness: produce time → visible in a query (the Iceberg commit), p50/p99, while
the flow runs continuously at a steady produce rate.

Every path is timed ``--passes`` times in one process, each pass over ``--events`` new
events (in the first, (a) and (c) also read the warm-up's 20,000). Pass 1 runs right
after start: for icetide a new JVM, whose JIT compiler still takes CPU from the batches
on a small machine (each pass reports the compiler's CPU time); the last pass is the
rate a running ingester sustains. Each pass also reports the CPU seconds of every
process (:mod:`benchmarks.cpu`) under (b) and (c), per 1,000,000 events: where the time
goes. Prints the figures and ratios of every pass and appends them to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.cpu import CpuMeter, descendants
from benchmarks.ingest.peer import pyiceberg_ingest
from benchmarks.ingest.rawbench import raw_consume
from benchmarks.report import append_section
from icetide.config import CatalogConfig, KafkaConfig, Settings, SparkConfig
from icetide.devkit.embedded.kinds import KINDS, embedded_broker
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.flows.loop import Flow, FlowLoop
from icetide.lake.commit import iter_ancestor_summaries
from icetide.model.markers import Marker
from icetide.runtime.metastore.service import stop_metastore
from icetide.sources.kafka.source import KafkaSource
from icetide.sources.kafka.watermarks import WatermarkClient

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "clicktopic"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ingest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=1_000_000, help="events for (a)/(b)/(c)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--broker", choices=KINDS, default="tansu",
                   help="the embedded broker: tansu (default) or kafka (Apache Kafka, KRaft)")
    p.add_argument("--max-records", type=int, default=500_000, help="per micro-batch")
    p.add_argument("--passes", type=int, default=3, choices=range(1, 11), metavar="1..10",
                   help="timed passes of every path, each over --events new events")
    p.add_argument("--fresh-seconds", type=float, default=60.0)
    p.add_argument("--fresh-rate", type=float, default=10_000.0, help="events/s produced")
    p.add_argument("--trigger", type=float, default=1.0, help="trigger interval, seconds")
    p.add_argument("--readers", type=_readers, default=("jvm", "python"),
                   help="kafka.reader values (b) runs with, in order (default: jvm,python)")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _readers(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    if not kinds or set(kinds) - {"jvm", "python"} or len(set(kinds)) < len(kinds):
        raise argparse.ArgumentTypeError(f"--readers {text!r}: list jvm and/or python once, "
                                         "e.g. jvm,python")
    return kinds


def _use_reader(flow: Flow, kind: str) -> None:
    """Make the flow's Kafka sources read the following batches with reader ``kind``."""
    for src in flow.sources.values():
        if isinstance(src, KafkaSource):
            src.use_reader("jvm" if kind == "jvm" else "python")


def _flow(home: Path, bootstrap: str, max_records: int) -> tuple[SparkSession, Flow]:
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline
    from icetide.runtime.session import get_spark

    settings = Settings(home=home, spark=SparkConfig(driver_memory="4g"),
                        catalog=CatalogConfig(), kafka=KafkaConfig(
                            bootstrap=bootstrap, max_records_per_trigger=max_records))
    spark = get_spark(settings)
    load_seed_dimensions(spark, settings.catalog.name)
    with PipelineRun(spark, settings, load_pipeline(ROOT / "examples" / "clickstream"),
                     only=["clickevent"]) as run:
        return spark, run.compile(run.flows[0])


def _latencies(spark: SparkSession, flow: Flow, since_ms: int) -> np.ndarray:
    """Per event: commit time of the batch that made it visible − its produce time."""
    batches: list[tuple[int, dict[str, int]]] = []
    for _, summary in iter_ancestor_summaries(spark, flow.target):
        marker = Marker.from_summary(summary)
        if marker and marker.flow == flow.name and marker.committed_at_ms:
            (end,) = marker.end.values()
            offsets = {k: int(str(v)) for k, v in end.items() if k.isdigit()}
            batches.append((marker.committed_at_ms, offsets))
    batches.sort()
    rows: Any = spark.sql(
        f"SELECT _kafka_partition p, _kafka_offset o, updateTime t FROM {flow.target} "
        f"WHERE updateTime >= {since_ms}").toPandas()
    out = np.empty(len(rows))
    for p, group in rows.groupby("p"):
        ends = np.array([b[1].get(str(p), 0) for b in batches])
        commits = np.array([b[0] for b in batches])
        idx = np.searchsorted(ends, group["o"].to_numpy(), side="right")
        out[group.index] = commits[idx] - group["t"].to_numpy()
    return out / 1000.0


def _freshness(spark: SparkSession, flow: Flow, bootstrap: str,
               a: argparse.Namespace) -> np.ndarray:
    stop = threading.Event()
    loop = FlowLoop(spark, flow)
    runner = threading.Thread(target=loop.run_forever, args=(a.trigger, stop), daemon=True)
    runner.start()
    time.sleep(2 * a.trigger)
    since = int(time.time() * 1000)
    produce_clicks(bootstrap, TOPIC, GenOptions(count=0, rate=a.fresh_rate,
                                                duration=a.fresh_seconds, seed=3))
    time.sleep(5 * a.trigger)
    stop.set()
    runner.join()
    return _latencies(spark, flow, since)


@dataclass(frozen=True)
class Run:
    """(b) with one reader over ``--events`` new events."""

    reader: str
    rate: float  # events/s
    batches: int
    jit_seconds: float  # CPU the JVM's JIT compiler used during it
    cpu: Mapping[str, float]  # CPU seconds per process role


@dataclass(frozen=True)
class Pass:
    """One timed pass of every path over the same topic, events/s; (b) once per reader."""

    raw: float
    runs: list[Run]
    peer: float
    peer_cpu: Mapping[str, float]  # CPU seconds per process role during (c)


def _jit_ms(spark: SparkSession) -> int:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return int(jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
               .getTotalCompilationTime())


def _meter(spark: SparkSession, broker_pid: int | None) -> CpuMeter:
    """CPU per role: this process (the peer; py4j for icetide), the Spark JVM (its task
    threads and JIT), icetide's Python workers (the reader tasks) and the broker."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    return CpuMeter({
        "python": lambda: [os.getpid()], "jvm": lambda: [jvm_pid],
        "workers": lambda: descendants(jvm_pid)[1:],
        "broker": lambda: [broker_pid] if broker_pid else [],
    })


def _pass(spark: SparkSession, flow: Flow, bootstrap: str, peer_dir: Path,
          since: Mapping[int, int] | None, meter: CpuMeter, a: argparse.Namespace) -> Pass:
    """(a) and (c) over the topic from ``since`` (else all of it), then (b) over what it
    has not committed yet: the same events; then (b) with each further reader over
    ``a.events`` events produced for it."""
    raw = raw_consume(bootstrap, TOPIC, since=since)
    meter.start()
    peer = pyiceberg_ingest(bootstrap, TOPIC, peer_dir, since=since)
    peer_cpu = meter.stop()
    runs: list[Run] = []
    for i, kind in enumerate(a.readers):
        if i:
            produce_clicks(bootstrap, TOPIC, GenOptions(count=a.events, seed=100 + i))
        runs.append(_run(spark, flow, kind, meter))
    return Pass(raw.rate, runs, peer, peer_cpu)


def _run(spark: SparkSession, flow: Flow, kind: str, meter: CpuMeter) -> Run:
    """(b) with reader ``kind`` until caught up."""
    _use_reader(flow, kind)
    jit, began = _jit_ms(spark), time.perf_counter()
    meter.start()
    results = FlowLoop(spark, flow).run_until_caught_up()
    seconds = time.perf_counter() - began
    cpu = meter.stop()
    rate = sum(r.rows_in for r in results) / seconds
    return Run(kind, rate, len(results), (_jit_ms(spark) - jit) / 1000, cpu)


def _cpu_table(passes: list[Pass], events: int) -> str:
    """CPU seconds per 1,000,000 events, per process role, of (b) and (c)."""
    per = 1_000_000 / events
    rows = [f"| {i} | {r.reader} | {r.cpu['jvm'] * per:.2f} (JIT {r.jit_seconds * per:.2f}) "
            f"| {r.cpu['workers'] * per:.2f} | {r.cpu['python'] * per:.2f} "
            f"| {r.cpu['broker'] * per:.2f} | {sum(r.cpu.values()) * per:.2f} "
            f"| {p.peer_cpu['python'] * per:.2f} | {p.peer_cpu['broker'] * per:.2f} "
            f"| {(p.peer_cpu['python'] + p.peer_cpu['broker']) * per:.2f} |"
            for i, p in enumerate(passes, 1) for r in p.runs]
    return "\n".join([
        "CPU seconds per 1,000,000 events (Linux /proc), per process:\n",
        "| pass | (b) reader | (b) Spark JVM | (b) Python workers | (b) driver | (b) broker "
        "| (b) all | (c) peer | (c) broker | (c) all |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *rows])


def _table(passes: list[Pass]) -> str:
    rows = [f"| {i}{' (new process)' if i == 1 else ''} | {p.raw:,.0f} | {r.reader} "
            f"| {r.rate:,.0f} | {p.peer:,.0f} | {r.rate / p.raw:.2f} | {r.rate / p.peer:.2f} "
            f"| {r.batches} | {r.jit_seconds:.1f} s |"
            for i, p in enumerate(passes, 1) for r in p.runs]
    return "\n".join([
        "| pass | (a) raw, events/s | (b) reader | (b) icetide, events/s | (c) peer, events/s "
        "| (b)/(a) | (b)/(c) | (b) micro-batches | JIT compiler CPU during (b) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |", *rows])


def _sustained(last: Pass) -> str:
    return "; ".join(f"(b) {r.reader} {r.rate:,.0f} events/s = {r.rate / last.raw:.2f} × (a), "
                     f"{r.rate / last.peer:.2f} × (c)" for r in last.runs)


def _fresh(a: argparse.Namespace, kind: str, lat: np.ndarray) -> str:
    p50, p99 = (float(np.percentile(lat, q)) for q in (50, 99))
    return (f"{kind}: {len(lat):,} events, p50 {p50:.2f}s ({p50 / a.trigger:.1f} × trigger), "
            f"p99 {p99:.2f}s ({p99 / a.trigger:.1f} × trigger)")


def _body(a: argparse.Namespace, passes: list[Pass], gen_rate: float,
          lats: Mapping[str, np.ndarray]) -> str:
    fresh = "; ".join(_fresh(a, kind, lat) for kind, lat in lats.items())
    return f"""Command: `python -m benchmarks.ingest --events {a.events} --partitions \
{a.partitions} --max-records {a.max_records} --passes {a.passes} --fresh-rate \
{a.fresh_rate:.0f} --trigger {a.trigger} --broker {a.broker} --readers {",".join(a.readers)}`

(a) raw confluent-kafka consume + orjson decode, 1 process; (b) icetide Kafka → \
`ods_behavior.clickevent` per reader (`kafka.reader`: jvm = Spark's Kafka source, python = \
confluent-kafka tasks); (c) pyiceberg-only Python ingester. Each pass: {a.events:,} new \
events, read by (a), (c) and the first reader; each further reader reads {a.events:,} more.

{_table(passes)}

{_cpu_table(passes, a.events)}

Sustained (pass {len(passes)}): {_sustained(passes[-1])}. Generator: {gen_rate:,.0f} \
events/s produced.

Freshness at {a.fresh_rate:,.0f} events/s with a {a.trigger:g}s trigger (produce time → \
Iceberg commit that makes the event visible): {fresh}.
"""


def _passes(spark: SparkSession, flow: Flow, bootstrap: str, a: argparse.Namespace,
            tmp: Path, meter: CpuMeter) -> tuple[list[Pass], float]:
    """``a.passes`` passes, each over ``a.events`` new events; the generator's rate."""
    passes: list[Pass] = []
    since: dict[int, int] | None = None  # pass 1: (a) and (c) read the warm-up's too
    rate = 0.0
    for i in range(1, a.passes + 1):
        gen = produce_clicks(bootstrap, TOPIC, GenOptions(count=a.events, seed=1 + i))
        rate = rate or gen.rate
        passes.append(_pass(spark, flow, bootstrap, tmp / f"peer-{i}", since, meter, a))
        marks = WatermarkClient(TOPIC, bootstrap).watermarks()
        since = {p: high for p, (_, high) in marks.items()}
    return passes, rate


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as tmp, \
            embedded_broker(a.broker, Path(tmp) / "broker") as broker:
        bs = broker.bootstrap
        produce_clicks(bs, TOPIC, GenOptions(count=20_000, partitions=a.partitions, seed=1))
        spark, flow = _flow(Path(tmp) / "home", bs, a.max_records)
        for i, kind in enumerate(a.readers):  # first plans, Python workers, each reader's JIT
            if i:
                produce_clicks(bs, TOPIC, GenOptions(count=20_000, seed=50 + i))
            _use_reader(flow, kind)
            FlowLoop(spark, flow).run_until_caught_up()
        passes, rate = _passes(spark, flow, bs, a, Path(tmp), _meter(spark, broker.pid))
        lats = {}
        for kind in a.readers:
            _use_reader(flow, kind)
            lats[kind] = _freshness(spark, flow, bs, a)
        stop_metastore(Settings(home=Path(tmp) / "home"))  # the home's catalog service
    body = _body(a, passes, rate, lats)
    print(body)
    if not a.no_doc:
        line = f"sustained (pass {len(passes)}): {_sustained(passes[-1])}"
        print(f"written to {append_section('Ingest (benchmarks/ingest)', body, headline=line)}")


if __name__ == "__main__":
    main()
