"""``python -m benchmarks.ingest``: Kafka ingest, side by side on one topic in one run.

(a) raw confluent-kafka consume + orjson decode in one process — the source's ceiling;
(b) icetide: Kafka → ``ods_behavior.clickevent`` (examples/clickstream, Spark + Iceberg);
(c) a pyiceberg-only Python ingester doing the same job without Spark;
plus freshness: produce time → visible in a query (the Iceberg commit), p50/p99, while
the flow runs continuously at a steady produce rate.

Every path is timed twice in one process. First pass, right after start: (a) and (c)
read the whole topic (the warm-up's 20,000 events and ``--events`` fresh ones), (b) the
fresh ones, in a new JVM whose JIT compiler still takes CPU from the batches on a small
machine (the pass reports the compiler's CPU time). Second pass: every path reads the
same ``--events`` more — the rate a running ingester sustains. Prints the figures and
ratios of both passes and appends them to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.ingest.peer import pyiceberg_ingest
from benchmarks.ingest.rawbench import raw_consume
from benchmarks.report import append_section
from icetide.config import CatalogConfig, KafkaConfig, Settings, SparkConfig
from icetide.devkit.embedded.broker import EmbeddedBroker
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
    p.add_argument("--max-records", type=int, default=500_000, help="per micro-batch")
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
            offsets = {k: int(v) for k, v in end.items() if k.isdigit()}
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


def _jit_ms(spark: SparkSession) -> int:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return int(jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
               .getTotalCompilationTime())


def _pass(spark: SparkSession, flow: Flow, bootstrap: str, peer_dir: Path,
          since: Mapping[int, int] | None = None) -> Pass:
    """(a) and (c) over the topic from ``since`` (else all of it), then (b) over what it
    has not committed yet: the same events."""
    raw = raw_consume(bootstrap, TOPIC, since=since)
    peer = pyiceberg_ingest(bootstrap, TOPIC, peer_dir, since=since)
    jit, began = _jit_ms(spark), time.perf_counter()
    results = FlowLoop(spark, flow).run_until_caught_up()
    seconds = time.perf_counter() - began
    icetide = sum(r.rows_in for r in results) / seconds
    return Pass(raw.rate, icetide, peer, len(results), (_jit_ms(spark) - jit) / 1000)


def _cells(rate: float, raw: float) -> str:
    return f"{rate:,.0f} | {rate / raw:.2f}"


def _body(a: argparse.Namespace, cold: Pass, warm: Pass, gen_rate: float,
          lat: np.ndarray) -> str:
    p50, p99 = (float(np.percentile(lat, q)) for q in (50, 99))
    rows = [("(a) raw confluent-kafka consume + orjson decode, 1 process", "raw"),
            ("(b) icetide Kafka → `ods_behavior.clickevent`", "icetide"),
            ("(c) pyiceberg-only Python ingester", "peer")]
    table = "\n".join(
        f"| {label} | {_cells(getattr(cold, k), cold.raw)} "
        f"| {_cells(getattr(warm, k), warm.raw)} |" for label, k in rows)
    return f"""Command: `python -m benchmarks.ingest --events {a.events} --partitions \
{a.partitions} --max-records {a.max_records} --fresh-rate {a.fresh_rate:.0f} --trigger {a.trigger}`

| path | first pass, events/s | ratio to (a) | second pass, events/s | ratio to (a) |
| --- | ---: | ---: | ---: | ---: |
{table}

(b) / (c): first pass {cold.icetide / cold.peer:.2f}, second pass \
{warm.icetide / warm.peer:.2f}. icetide's micro-batches: {cold.batches} and {warm.batches}; \
CPU of the JVM's JIT compiler during them: {cold.jit_seconds:.1f} s and \
{warm.jit_seconds:.1f} s. Generator: {gen_rate:,.0f} events/s produced.

Freshness at {a.fresh_rate:,.0f} events/s with a {a.trigger:g}s trigger (produce time → \
Iceberg commit that makes the event visible), {len(lat):,} events: p50 {p50:.2f}s \
({p50 / a.trigger:.1f} × trigger), p99 {p99:.2f}s ({p99 / a.trigger:.1f} × trigger).
"""


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as tmp, \
            EmbeddedBroker(None, Path(tmp) / "broker") as broker:
        bs = broker.bootstrap
        produce_clicks(bs, TOPIC, GenOptions(count=20_000, partitions=a.partitions, seed=1))
        spark, flow = _flow(Path(tmp) / "home", bs, a.max_records)
        FlowLoop(spark, flow).run_until_caught_up()  # Python workers, first plans
        gen = produce_clicks(bs, TOPIC, GenOptions(count=a.events, seed=2))
        cold = _pass(spark, flow, bs, Path(tmp) / "peer-1")
        read = {p: high for p, (_, high) in WatermarkClient(TOPIC, bs).watermarks().items()}
        produce_clicks(bs, TOPIC, GenOptions(count=a.events, seed=3))
        warm = _pass(spark, flow, bs, Path(tmp) / "peer-2", since=read)
        lat = _freshness(spark, flow, bs, a)
        stop_metastore(Settings(home=Path(tmp) / "home"))  # the home's catalog service
    body = _body(a, cold, warm, gen.rate, lat)
    print(body)
    if not a.no_doc:
        print(f"written to {append_section('Ingest (benchmarks/ingest)', body)}")


if __name__ == "__main__":
    main()
