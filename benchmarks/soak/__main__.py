"""``python -m benchmarks.soak --minutes 60 --rate 5000``: the whole pipeline for an hour.

The seed pipeline (Kafka → ODS, CDC-free dimensions) and its layers run continuously in
one process, with table maintenance on (``maintenance.*``; ``--maintenance-interval``),
while the generator produces ``--rate`` events/s and one probe click a second. Each
minute it records the p99 freshness of that minute's probes (produced → first
``dws.product_views`` snapshot holding them), the data files, metadata.json size and
snapshots of the main tables, and the time of an aggregate query over ODS. Writes the
per-minute table and a chart (``--out``, PNG, needs the ``bench`` extra: matplotlib)
and appends both to docs/benchmarks.md. Run it alone on a quiet machine.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.dws.__main__ import TOPIC, VIEWS, _probes
from benchmarks.report import DOC, append_section
from benchmarks.soak.chart import draw, markdown_table
from benchmarks.soak.sample import Minute, ProbeWatch, freshness_by_minute, minute_row
from icetide.config import (
    CatalogConfig,
    KafkaConfig,
    MaintenanceConfig,
    MetastoreConfig,
    Settings,
    SparkConfig,
)
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=int, default=60, help="how long to ingest")
    p.add_argument("--rate", type=float, default=5_000.0, help="events/s produced")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--trigger", type=float, default=5.0, help="trigger interval, seconds")
    p.add_argument("--maintenance-interval", type=float, default=300.0,
                   help="seconds between maintenance passes of one table")
    p.add_argument("--out", type=Path, default=DOC.parent / "img" / "soak.png",
                   help="where the chart goes")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _settings(tmp: Path, bootstrap: str, a: argparse.Namespace) -> Settings:
    return Settings(home=tmp / "home", spark=SparkConfig(driver_memory="4g"),
                    catalog=CatalogConfig(), kafka=KafkaConfig(bootstrap=bootstrap),
                    metastore=MetastoreConfig(port=free_port()),
                    maintenance=MaintenanceConfig(interval=a.maintenance_interval))


def _sample(spark: Any, stop: threading.Event, watch: ProbeWatch, rows: list[Minute]) -> None:
    """Poll probes every 5 s; one :class:`Minute` at the end of every minute."""
    next_minute = time.monotonic() + 60
    while not stop.wait(5.0):
        watch.poll()
        if time.monotonic() >= next_minute:
            rows.append(minute_row(spark, len(rows), []))
            next_minute += 60


def _measure(spark: Any, run: Any, bootstrap: str, a: argparse.Namespace) -> list[Minute]:
    stop, probes_stop = threading.Event(), threading.Event()
    sent: dict[str, int] = {}
    rows: list[Minute] = []
    watch = ProbeWatch(spark, VIEWS)
    start_ms = int(time.time() * 1000)
    threads = [
        threading.Thread(target=run.run_forever, args=(stop,), daemon=True),
        threading.Thread(target=lambda: sent.update(_probes(bootstrap, probes_stop)),
                         daemon=True),
        threading.Thread(target=_sample, args=(spark, stop, watch, rows), daemon=True),
    ]
    for thread in threads:
        thread.start()
    produce_clicks(bootstrap, TOPIC, GenOptions(count=0, rate=a.rate, duration=a.minutes * 60,
                                                seed=11, partitions=a.partitions))
    probes_stop.set()
    time.sleep(65)  # one more minute: the last probes drain and are counted
    stop.set()
    for thread in threads:
        thread.join(120)
    watch.poll()
    by_minute = freshness_by_minute(sent, watch.seen, start_ms)
    for row in rows:  # probes are known once the prober stopped
        lat = by_minute.get(row.minute, [])
        row.freshness_p99 = float(np.percentile(lat, 99)) if lat else None
    return rows


def main(argv: list[str] | None = None) -> None:
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline
    from icetide.runtime.metastore.service import stop_metastore
    from icetide.runtime.session import get_spark, stop_spark

    a = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-soak-") as tmp, \
            EmbeddedBroker(None, Path(tmp) / "broker") as broker:
        produce_clicks(broker.bootstrap, TOPIC,
                       GenOptions(count=10_000, partitions=a.partitions, seed=1))
        settings = _settings(Path(tmp), broker.bootstrap, a)
        spark = get_spark(settings)
        try:
            load_seed_dimensions(spark, settings.catalog.name)
            run = PipelineRun(spark, settings, load_pipeline(ROOT / "examples" / "clickstream"),
                              trigger_interval=a.trigger)
            with run:
                run.run_once()  # create every table; warm-up
                rows = _measure(spark, run, broker.bootstrap, a)
        finally:
            stop_spark()
            stop_metastore(settings)
    _report(rows, a)


def _report(rows: list[Minute], a: argparse.Namespace) -> None:
    table = markdown_table(rows)
    chart = draw(rows, a.out)
    print(table)
    body = (f"Command: `python -m benchmarks.soak --minutes {a.minutes} --rate {a.rate:.0f} "
            f"--trigger {a.trigger:g} --maintenance-interval {a.maintenance_interval:g}`\n\n"
            f"{table}\n")
    if chart is not None:
        body += f"\n![soak]({chart.relative_to(DOC.parent).as_posix()})\n"
        print(f"chart: {chart}")
    if not a.no_doc:
        print(f"written to {append_section('Soak (benchmarks/soak)', body)}")


if __name__ == "__main__":
    main()
