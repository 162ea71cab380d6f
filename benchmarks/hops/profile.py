"""The measurement of ``python -m benchmarks.hops``: single batches per hop, per size."""

from __future__ import annotations

import contextlib
import itertools
import logging
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.hops.cpu_parts import PartMeter, PhaseCpu
from icetide.config import CatalogConfig, KafkaConfig, MetastoreConfig, Settings, SparkConfig
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.flows.loop import BatchResult, FlowLoop
from icetide.runtime.metastore.service import running, stop_metastore

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
TOPIC = "clicktopic"
#: hop label → the flow measured
HOPS = {
    "ODS append (Kafka → clickevent)": "ods_behavior.clickevent",
    "DWD append + dimension joins": "dwd.click_wide",
    "DWS aggregation MERGE + changelog (product_user)": "dws.product_user",
    "DWS aggregation MERGE (count_views_uv)": "dws.count_views_uv",
    "DWS aggregation MERGE + changelog (user_activity)": "dws.user_activity",
    "DWS partial-update MERGE (profile_activity)": "dws.profile_activity",
    "CDC MERGE (products)": "dim_db.products",
}
PRODUCTS = tuple(str(i) for i in range(1, 10))  # the seed's productIds


Measured = tuple[BatchResult, dict[str, float]]  # a batch and its CPU-ms figures


def _figures(measured: list[Measured]) -> dict[str, float]:
    """Median wall seconds, jobs, seconds per phase and CPU-ms per part over the batches."""
    results = [r for r, _ in measured]
    phases = sorted({k for r in results for k in r.phases})
    out = {"seconds": statistics.median(r.seconds for r in results),
           "jobs": statistics.median(r.jobs for r in results)}
    out.update({k: statistics.median(r.phases.get(k, 0.0) for r in results) for k in phases})
    cpu = sorted({k for _, c in measured for k in c})
    out.update({k: statistics.median(c.get(k, 0.0) for _, c in measured) for k in cpu})
    return out


def _batch(loop: FlowLoop, cpu: PhaseCpu) -> Measured:
    result, figures = cpu.batch(loop.run_batch)
    if result is None:
        raise SystemExit(f"{loop.flow.name}: nothing to do; the benchmark fed it no data")
    return result, figures


_prices = itertools.count(1)


def _updates(shop: Any, count: int) -> None:
    """``count`` price updates of the seed's products, in one transaction (each a new
    price: an update to the same value writes no binlog row)."""
    rows = [(1 + next(_prices) % 9_000 / 100, PRODUCTS[i % len(PRODUCTS)])
            for i in range(count)]
    with contextlib.closing(shop.connect()) as conn, conn.cursor() as cur:
        cur.executemany("UPDATE user_db.products SET product_price = %s WHERE productId = %s",
                        rows)
        conn.commit()


def _round(loops: dict[str, FlowLoop], feed: Callable[[int], None], size: int,
           cpu: PhaseCpu) -> dict[str, Measured]:
    """Feed ``size`` events to every hop, then one measured batch per hop, upstream first."""
    feed(size)
    return {name: _batch(loop, cpu) for name, loop in loops.items()}


@contextlib.contextmanager
def _pipeline(home: Path, conf: dict[str, str] | None = None
              ) -> Iterator[tuple[PartMeter, dict[str, FlowLoop], Callable[[int], None]]]:
    from icetide.devkit.demo.runner import DIMS_KEY
    from icetide.devkit.demo.shop import shop_database
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline
    from icetide.runtime.session import get_spark

    with EmbeddedBroker(None, home / "broker") as broker:
        settings = Settings(home=home, spark=SparkConfig(driver_memory="4g", conf=conf or {}),
                            catalog=CatalogConfig(), kafka=KafkaConfig(bootstrap=broker.bootstrap),
                            metastore=MetastoreConfig(port=free_port()))
        with shop_database(settings, None) as shop:
            graph = load_pipeline(ROOT / "examples" / "clickstream", env=shop.pipeline_env(),
                                  configuration={DIMS_KEY: "cdc"})
            spark = get_spark(settings)
            produce_clicks(broker.bootstrap, TOPIC, GenOptions(count=1000, partitions=4, seed=1))
            with PipelineRun(spark, settings, graph) as run:
                run.run_once()  # creates every table, snapshots the dimensions, warms up
                flows = {f.name: f for f in run.compile_all()}
                loops = {name: FlowLoop(spark, flows[name]) for name in HOPS.values()}

                def feed(size: int) -> None:
                    produce_clicks(broker.bootstrap, TOPIC, GenOptions(count=size, seed=size))
                    _updates(shop, size)
                service = running(settings)
                try:
                    yield PartMeter(spark, service.pid if service else None), loops, feed
                finally:
                    stop_metastore(settings)  # the home's catalog service, started by Spark


def profile(home: Path, sizes: tuple[int, int], repeat: int,
            conf: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """hop → str(size) → median figures (``conf``: extra Spark conf)."""
    found: dict[str, dict[int, list[Measured]]] = {h: {s: [] for s in sizes} for h in HOPS}
    with _pipeline(home, conf) as (meter, loops, feed):
        cpu = PhaseCpu(meter)
        with cpu.installed():
            for size in sizes:
                _round(loops, feed, size, cpu)  # warm-up at this size
                for _ in range(repeat):
                    batch = _round(loops, feed, size, cpu)
                    for hop, flow in HOPS.items():
                        found[hop][size].append(batch[flow])
    return {hop: {str(s): _figures(rs) for s, rs in by_size.items()}
            for hop, by_size in found.items()}
