"""One path of ``python -m benchmarks.lookup``: its dimension, its pipeline, its window.

A path is the example's ODS flow (``examples/clickstream/clickevent.py``, its text as it
is) reading a topic of its own and looking products up in one dimension with
``dp.lookup_join``: the seed's 9-row ``dim_db.products`` (broadcast) or a generated
``dim_db.items`` of ``--rows`` rows, bucketed by its key (joined without a broadcast).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.cpu import CpuMeter
from benchmarks.freshness.run import _probe_loop
from benchmarks.freshness.trace import Probe, commits, ods_hits
from benchmarks.peers.flink.measure import spark_roles
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.flows.loop import Flow, FlowLoop

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
FLOW_FILE = ROOT / "examples" / "clickstream" / "clickevent.py"
SEED_DIM = "dim_db.products"
ITEMS = "dim_db.items"
DRAIN_S = 180.0


@dataclass(frozen=True)
class LookupPath:
    """One lookup path: its dimension, the product ids its clicks carry, its tables."""

    label: str
    dimension: str
    products: int  # productIds "0".."products-1" in the clicks; 0: the dimension's rows
    topic: str
    target: str


@dataclass
class Window:
    """One path's measurement: clicks at ``rate`` for ``seconds`` with a probe a second."""

    path: LookupPath
    rate: float
    seconds: float
    products: int  # productIds "0".."products-1" in the clicks
    dim_rows: int = 0
    first_batch_s: float = 0.0  # the warm-up's first batch (it caches the dimension)
    probes: list[Probe] = field(default_factory=list)
    fresh: list[float | None] = field(default_factory=list)
    cores: dict[str, float] = field(default_factory=dict)
    valid: int = 0
    batches: int = 0
    rows: int = 0  # rows in the target after the window
    mismatched: int = -1  # target rows whose name differs from the dimension's now
    join: str = ""  # how the flow joined: "broadcast", or "partitioned (N)" cached partitions


def write_items(spark: SparkSession, catalog: str, rows: int, buckets: int) -> float:
    """``dim_db.items``: ``rows`` products (``productId`` "0".."rows-1", ``name``
    ``item-<id>``, a price), bucketed by ``productId``; the seconds writing took."""
    ident = f"{catalog}.{ITEMS}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.dim_db")
    spark.sql(f"DROP TABLE IF EXISTS {ident} PURGE")
    spark.sql(f"CREATE TABLE {ident} (productId string NOT NULL, name string, "
              f"product_price decimal(10,4)) USING iceberg "
              f"PARTITIONED BY (bucket({int(buckets)}, productId))")
    began = time.monotonic()
    spark.sql(f"INSERT INTO {ident} SELECT CAST(id AS string), concat('item-', id), "
              f"CAST(id % 100000 / 100 AS decimal(10,4)) FROM range({int(rows)})")
    return time.monotonic() - began


def pipeline(folder: Path, path: LookupPath) -> Path:
    """A pipeline folder with the example's ODS flow on ``path``'s topic, dimension and
    target (the flow file's text, with those names replaced)."""
    text = FLOW_FILE.read_text()
    for old, new in ((f'"{SEED_DIM}"', f'"{path.dimension}"'),
                     ('"ods_behavior.clickevent"', f'"{path.target}"'),
                     ('"ods_behavior.clickevent_dlq"', f'"{path.target}_dlq"')):
        if old not in text:
            raise SystemExit(f"{FLOW_FILE} no longer names {old}: update benchmarks/lookup")
        text = text.replace(old, new)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clickevent.py").write_text(text)
    (folder / "icetide-pipeline.yml").write_text(
        f"name: lookup-{path.label}\ncatalog: lake\ndatabase: ods_behavior\n"
        'libraries:\n  - glob:\n      include: "*.py"\n'
        f"sources:\n  clicks: {{type: kafka, topic: {path.topic}}}\n")
    return folder


def _clicks(w: Window, hot: float, partitions: int, seed: int, **pace: Any) -> GenOptions:
    return GenOptions(partitions=partitions, seed=seed, products=w.products,
                      hot_share=hot, **pace)


def warm_up(spark: SparkSession, flow: Flow, w: Window, bootstrap: str, hot: float,
            partitions: int) -> None:
    """Ten seconds' worth of clicks, taken in batches until caught up: the first batch
    caches the dimension (timed), the rest warm the JIT."""
    produce_clicks(bootstrap, w.path.topic, _clicks(w, hot, partitions, 1,
                                                    count=int(w.rate * 10)))
    began = time.monotonic()
    FlowLoop(spark, flow).run_until_caught_up(max_batches=1)
    w.first_batch_s = time.monotonic() - began
    FlowLoop(spark, flow).run_until_caught_up()


def window(spark: SparkSession, flow: Flow, w: Window, *, bootstrap: str, catalog: Any,
           hot: float, partitions: int, trigger: float, broker_pid: int | None) -> None:
    """The flow's loop while clicks come at ``w.rate`` with a probe a second; then the
    probes' freshness (produced → the ODS commit that made them visible)."""
    stop, probes_stop = threading.Event(), threading.Event()
    loop = threading.Thread(target=FlowLoop(spark, flow).run_forever, args=(trigger, stop),
                            daemon=True)
    prober = threading.Thread(target=_probe_loop, daemon=True,
                              args=(bootstrap, probes_stop, w.probes, w.path.topic))
    meter = CpuMeter({**spark_roles(spark),
                      "broker": lambda: [broker_pid] if broker_pid else []})
    loop.start()
    meter.start()
    began = time.monotonic()
    prober.start()
    report = produce_clicks(bootstrap, w.path.topic, _clicks(
        w, hot, partitions, 2, count=0, rate=w.rate, duration=w.seconds))
    probes_stop.set()
    prober.join()
    cpu, elapsed = meter.stop(), time.monotonic() - began
    w.valid = report.valid
    w.cores = {"icetide": (cpu["driver"] + cpu["jvm"] + cpu["workers"]) / elapsed,
               "broker": cpu["broker"] / elapsed}
    table = (w.path.target, (w.path.target,))
    deadline = time.monotonic() + DRAIN_S
    while w.probes and time.monotonic() < deadline and not all(
            h is not None for h in ods_hits(commits(catalog, *table), w.probes[-3:])):
        time.sleep(1)
    stop.set()
    loop.join()
    done = commits(catalog, *table)
    w.batches = sum(1 for c in done if c.committed_ms >= w.probes[0].produced_ms) \
        if w.probes else 0
    w.fresh = [None if h is None else (h.committed_ms - p.produced_ms) / 1000
               for h, p in zip(ods_hits(done, w.probes), w.probes, strict=True)]


def check(spark: SparkSession, catalog: str, w: Window) -> None:
    """Rows in the target, and how many carry another name than the dimension holds for
    their product now (the dimension does not change here: 0 is right)."""
    from icetide.lake.lookups import lookups

    target, dim = f"{catalog}.{w.path.target}", f"{catalog}.{w.path.dimension}"
    parts = lookups(spark).partitions(dim)
    w.join = "broadcast" if parts is None else f"partitioned ({parts})"
    w.dim_rows = int(spark.table(dim).count())
    w.rows = int(spark.table(target).count())
    w.mismatched = int(spark.sql(
        f"SELECT count(*) FROM {target} t LEFT JOIN {dim} d ON t.productId = d.productId "
        "WHERE NOT (t.name <=> d.name)").first()[0])  # type: ignore[index]
