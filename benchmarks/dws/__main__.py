"""``python -m benchmarks.dws``: DWS freshness while ingesting clicks continuously.

The seed pipeline (Kafka → ODS) and the layers pipeline (ODS → DWD → DWS → ADS) run
continuously in one process while the generator produces ``--rate`` events/s. Once a
second a *probe* click for a product of its own (``probe-<n>``) is produced; its
freshness is the time from producing it to the first ``dws.product_views`` snapshot
that contains it (found afterwards by time travel over that table's snapshots), i.e.
event produced → reflected in DWS, through ODS and DWD. Prints p50/p99 and appends
them to docs/benchmarks.md. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import append_section
from icetide.config import CatalogConfig, KafkaConfig, Settings, SparkConfig
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.gen.clicks import GenOptions, produce_clicks

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "clicktopic"
VIEWS = "lake.dws.product_views"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dws", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=20_000.0, help="events/s produced")
    p.add_argument("--seconds", type=float, default=120.0, help="measured ingest duration")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--trigger", type=float, default=1.0, help="trigger interval, seconds")
    p.add_argument("--drain", type=float, default=300.0,
                   help="max seconds to wait for the last probe after producing stops")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _probes(bootstrap: str, stop: threading.Event) -> dict[str, int]:
    """One probe click a second until ``stop``: productId → produce time (epoch ms)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    sent: dict[str, int] = {}
    while not stop.wait(1.0):
        now = int(time.time() * 1000)
        pid = f"probe-{len(sent)}"
        event = {"cookieId": "probe", "expendTime": 1, "webpageId": 1, "uid": "probe",
                 "productId": pid, "updateTime": now}
        producer.produce(TOPIC, json.dumps(event).encode())
        producer.flush(5)
        sent[pid] = now
    return sent


def _first_seen(spark: Any) -> dict[str, int]:
    """productId of each probe → commit time (ms) of the first product_views snapshot with it."""
    seen: dict[str, int] = {}
    snaps = spark.sql(f"SELECT snapshot_id, committed_at FROM {VIEWS}.snapshots "
                      "ORDER BY committed_at").collect()
    for snap_id, committed in snaps:
        rows = spark.sql(f"SELECT productId FROM {VIEWS} VERSION AS OF {snap_id} "
                         "WHERE productId LIKE 'probe-%'").collect()
        for (pid,) in rows:
            seen.setdefault(pid, int(committed.timestamp() * 1000))
    return seen


def _drain(spark: Any, last_probe: str, seconds: float) -> None:
    """Keep the pipelines running until the last probe is in product_views (or timeout)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if spark.sql(f"SELECT 1 FROM {VIEWS} WHERE productId = '{last_probe}'").count():
            return
        time.sleep(1.0)
    print(f"{last_probe} not in {VIEWS} after {seconds:g}s of draining")


def _run(spark: Any, settings: Settings, bs: str, a: argparse.Namespace) -> np.ndarray:
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline

    run = PipelineRun(spark, settings, load_pipeline(ROOT / "examples" / "clickstream"),
                      trigger_interval=a.trigger)
    with run:
        run.run_once()  # create every table; warm-up
        return _measure(spark, run, bs, a)


def _measure(spark: Any, run: Any, bs: str, a: argparse.Namespace) -> np.ndarray:
    stop, probes_stop = threading.Event(), threading.Event()
    threads = [threading.Thread(target=run.run_forever, args=(stop,), daemon=True)]
    for t in threads:
        t.start()
    sent: dict[str, int] = {}
    prober = threading.Thread(target=lambda: sent.update(_probes(bs, probes_stop)), daemon=True)
    prober.start()
    produce_clicks(bs, TOPIC, GenOptions(count=0, rate=a.rate, duration=a.seconds, seed=5))
    probes_stop.set()
    prober.join()
    if sent:
        _drain(spark, max(sent, key=sent.__getitem__), a.drain)
    stop.set()
    for t in threads:
        t.join()
    seen = _first_seen(spark)
    missing = sorted(set(sent) - set(seen))
    if missing:
        print(f"{len(missing)} probes never reached {VIEWS}: {missing[:5]}...")
    return np.array([(seen[p] - sent[p]) / 1000.0 for p in sent if p in seen])


def main(argv: list[str] | None = None) -> None:
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.runtime.session import get_spark

    a = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as tmp, \
            EmbeddedBroker(None, Path(tmp) / "broker") as broker:
        bs = broker.bootstrap
        produce_clicks(bs, TOPIC, GenOptions(count=10_000, partitions=a.partitions, seed=1))
        settings = Settings(home=Path(tmp) / "home", spark=SparkConfig(driver_memory="4g"),
                            catalog=CatalogConfig(), kafka=KafkaConfig(bootstrap=bs))
        spark = get_spark(settings)
        load_seed_dimensions(spark, settings.catalog.name)
        lat = _run(spark, settings, bs, a)
    if not len(lat):
        raise SystemExit("no probe reached dws.product_views: nothing to report")
    p50, p99 = (float(np.percentile(lat, q)) for q in (50, 99))
    body = f"""Command: `python -m benchmarks.dws --rate {a.rate:.0f} --seconds {a.seconds:g} \
--partitions {a.partitions} --trigger {a.trigger:g}`

DWS freshness (probe click produced → first `dws.product_views` snapshot holding it,
through ODS and DWD) while ingesting {a.rate:,.0f} events/s with a {a.trigger:g}s trigger,
{len(lat)} probes: p50 {p50:.2f}s, p99 {p99:.2f}s.
"""
    print(body)
    if not a.no_doc:
        print(f"written to {append_section('DWS freshness (benchmarks/dws)', body)}")


if __name__ == "__main__":
    main()
