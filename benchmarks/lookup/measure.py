"""The paths of ``python -m benchmarks.lookup`` in one session: one broker, one lake."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from benchmarks.lookup.run import (
    ITEMS,
    LookupPath,
    Window,
    check,
    pipeline,
    warm_up,
    window,
    write_items,
)


def run_paths(a: argparse.Namespace, tmp: Path,
              paths: Sequence[LookupPath]) -> tuple[list[Window], float]:
    """Each path in turn (its flow compiled, warmed, measured, checked); the windows and
    the seconds ``dim_db.items`` took to write."""
    from icetide.config import CatalogConfig, KafkaConfig, Settings, SparkConfig
    from icetide.devkit.embedded.kinds import embedded_broker
    from icetide.devkit.gen.clicks import ensure_topic
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.engine.run import PipelineRun
    from icetide.lake.lookups import MAX_BYTES, lookups
    from icetide.pipelines import load_pipeline
    from icetide.runtime.catalogs import pyiceberg_catalog
    from icetide.runtime.session import get_spark, stop_spark

    windows: list[Window] = []
    with embedded_broker("tansu", tmp / "broker") as broker:
        settings = Settings(home=tmp / "home", spark=SparkConfig(driver_memory=a.driver_memory),
                            catalog=CatalogConfig(name="lake", type="hadoop"),
                            kafka=KafkaConfig(bootstrap=broker.bootstrap))
        spark = get_spark(settings)
        try:
            load_seed_dimensions(spark, "lake")
            write_s = (write_items(spark, "lake", a.rows, a.buckets)
                       if any(p.dimension == ITEMS for p in paths) else 0.0)
            catalog = pyiceberg_catalog(settings)
            for path in paths:
                folder = pipeline(tmp / f"pipeline-{path.label}", path)
                ensure_topic(broker.bootstrap, path.topic, a.partitions)
                keyed = path.dimension == ITEMS and a.broadcast_limit is not None
                lookups(spark).max_bytes = a.broadcast_limit if keyed else MAX_BYTES
                with PipelineRun(spark, settings, load_pipeline(folder),
                                 only=[path.target]) as run:
                    flow = run.compile(run.flows[0])
                    w = Window(path, a.rate, a.seconds, path.products or a.rows)
                    print(f"{path.label}: warming up", flush=True)
                    warm_up(spark, flow, w, broker.bootstrap, a.hot, a.partitions)
                    print(f"{path.label}: {a.seconds:g} s at {a.rate:g}/s", flush=True)
                    window(spark, flow, w, bootstrap=broker.bootstrap, catalog=catalog,
                           hot=a.hot, partitions=a.partitions, trigger=a.trigger,
                           broker_pid=broker.pid)
                    check(spark, "lake", w)
                    windows.append(w)
        finally:
            stop_spark()
    return windows, write_s
