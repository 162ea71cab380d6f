"""``python -m benchmarks.ingest``: Kafka ingest, side by side on one topic in one run.

(a) raw confluent-kafka consume + orjson decode in one process — the source's ceiling;
(b) icetide: Kafka → ``ods_behavior.clickevent`` (examples/clickstream, Spark + Iceberg);
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
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


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
class Pass:
    """One timed pass of every path over the same topic, events/s."""

    raw: float
    icetide: float
    peer: float
    batches: int
    jit_seconds: float  # CPU the JVM's JIT compiler used during icetide's pass
    cpu: Mapping[str, float]  # CPU seconds per process role during (b)
    peer_cpu: Mapping[str, float]  # ... and during (c)


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
          since: Mapping[int, int] | None, meter: CpuMeter) -> Pass:
    """(a) and (c) over the topic from ``since`` (else all of it), then (b) over what it
    has not committed yet: the same events."""
    raw = raw_consume(bootstrap, TOPIC, since=since)
    meter.start()
    peer = pyiceberg_ingest(bootstrap, TOPIC, peer_dir, since=since)
    peer_cpu = meter.stop()
    jit, began = _jit_ms(spark), time.perf_counter()
    meter.start()
    results = FlowLoop(spark, flow).run_until_caught_up()
    seconds = time.perf_counter() - began
    cpu = meter.stop()
    icetide = sum(r.rows_in for r in results) / seconds
    return Pass(raw.rate, icetide, peer, len(results), (_jit_ms(spark) - jit) / 1000,
                cpu, peer_cpu)


def _cpu_table(passes: list[Pass], events: int) -> str:
    """CPU seconds per 1,000,000 events, per process role, of (b) and (c)."""
    per = 1_000_000 / events
    rows = [f"| {i} | {r.cpu['jvm'] * per:.2f} (JIT {r.jit_seconds * per:.2f}) "
            f"| {r.cpu['workers'] * per:.2f} | {r.cpu['python'] * per:.2f} "
            f"| {r.cpu['broker'] * per:.2f} | {sum(r.cpu.values()) * per:.2f} "
            f"| {r.peer_cpu['python'] * per:.2f} | {r.peer_cpu['broker'] * per:.2f} "
            f"| {(r.peer_cpu['python'] + r.peer_cpu['broker']) * per:.2f} |"
            for i, r in enumerate(passes, 1)]
    return "\n".join([
        "CPU seconds per 1,000,000 events (Linux /proc), per process:\n",
        "| pass | (b) Spark JVM | (b) Python workers | (b) driver | (b) broker | (b) all "
        "| (c) peer | (c) broker | (c) all |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *rows])


def _table(passes: list[Pass]) -> str:
    rows = [f"| {i}{' (new process)' if i == 1 else ''} | {r.raw:,.0f} | {r.icetide:,.0f} "
            f"| {r.peer:,.0f} | {r.icetide / r.raw:.2f} | {r.icetide / r.peer:.2f} "
            f"| {r.batches} | {r.jit_seconds:.1f} s |" for i, r in enumerate(passes, 1)]
    return "\n".join([
        "| pass | (a) raw, events/s | (b) icetide, events/s | (c) peer, events/s | (b)/(a) "
        "| (b)/(c) | (b) micro-batches | JIT compiler CPU during (b) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *rows])


def _body(a: argparse.Namespace, passes: list[Pass], gen_rate: float, lat: np.ndarray) -> str:
    p50, p99 = (float(np.percentile(lat, q)) for q in (50, 99))
    last = passes[-1]
    return f"""Command: `python -m benchmarks.ingest --events {a.events} --partitions \
{a.partitions} --max-records {a.max_records} --passes {a.passes} --fresh-rate \
{a.fresh_rate:.0f} --trigger {a.trigger} --broker {a.broker}`

(a) raw confluent-kafka consume + orjson decode, 1 process; (b) icetide Kafka → \
`ods_behavior.clickevent`; (c) pyiceberg-only Python ingester. Each pass: {a.events:,} new \
events, read by every path.

{_table(passes)}

{_cpu_table(passes, a.events)}

Sustained (pass {len(passes)}): (b) {last.icetide:,.0f} events/s = {last.icetide / last.raw:.2f} × \
(a), {last.icetide / last.peer:.2f} × (c). Generator: {gen_rate:,.0f} events/s produced.

Freshness at {a.fresh_rate:,.0f} events/s with a {a.trigger:g}s trigger (produce time → \
Iceberg commit that makes the event visible), {len(lat):,} events: p50 {p50:.2f}s \
({p50 / a.trigger:.1f} × trigger), p99 {p99:.2f}s ({p99 / a.trigger:.1f} × trigger).
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
        passes.append(_pass(spark, flow, bootstrap, tmp / f"peer-{i}", since, meter))
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
        FlowLoop(spark, flow).run_until_caught_up()  # Python workers, first plans
        passes, rate = _passes(spark, flow, bs, a, Path(tmp), _meter(spark, broker.pid))
        lat = _freshness(spark, flow, bs, a)
        stop_metastore(Settings(home=Path(tmp) / "home"))  # the home's catalog service
    body = _body(a, passes, rate, lat)
    print(body)
    if not a.no_doc:
        print(f"written to {append_section('Ingest (benchmarks/ingest)', body)}")


if __name__ == "__main__":
    main()
