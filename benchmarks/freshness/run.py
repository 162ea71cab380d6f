"""One measured run of ``python -m benchmarks.freshness``: a fresh home, broker and pipeline
process on a shared MariaDB; generators and probes in this process."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.cpu import CpuMeter, JvmThreadMeter, descendants, is_java
from benchmarks.freshness.trace import ODS, UNTARGETED, Probe, cadence, commits, freshness
from icetide.config import CatalogConfig, KafkaConfig, MetastoreConfig, S3Config, Settings
from icetide.devkit.embedded.kinds import BrokerKind, Embedded, embedded_broker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.embedded.seaweed import EmbeddedS3, S3Info
from icetide.devkit.gen.business import BusinessOptions, run_business_updates
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.runtime.metastore.service import stop_metastore
from icetide.sources.kafka.watermarks import WatermarkClient

TOPIC = "clicktopic"
WARMUP_CLICKS = 2_000
WARMUP_S = 240.0  # the pipeline's first commits in every layer (JVM start, table creation)
DRAIN_S = 180.0


@dataclass(frozen=True)
class Load:
    """What a run does: clicks/s for how long, partitions, the pipeline's trigger and any
    extra environment of the pipeline process (e.g. ``ICETIDE_MAINTENANCE__INTERVAL``)."""

    rate: float
    seconds: float
    partitions: int = 4
    trigger: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: where the lake lives: the home's disk, or an S3-compatible store (SeaweedFS)
    storage: str = "local"
    #: the embedded broker: ``tansu`` (the default) or ``kafka`` (Apache Kafka, KRaft)
    broker: BrokerKind = "tansu"
    #: seconds of clicks at ``rate`` (no probes) before the measured window: the window
    #: then starts in the steady state, not in the new pipeline's catch-up (a cold JIT
    #: behind a growing backlog; the restart benchmark measures that)
    warmup: float = 0.0


#: Called every 10 s of the measured run with the catalog, the seconds elapsed and the
#: result so far (its probes).
Sampler = Callable[[Any, float, "RunResult"], None]


#: Called once the run drained, before the pipeline stops: the catalog and the result.
Finish = Callable[[Any, "RunResult"], None]


@dataclass
class RunResult:
    probes: list[Probe] = field(default_factory=list)
    freshness: dict[str, list[float | None]] = field(default_factory=dict)
    backlog: list[int] = field(default_factory=list)  # every 10 s: produced − in ODS
    clicks: int = 0  # valid clicks produced (warm-up and probes included)
    checks: list[Any] = field(default_factory=list)  # reconciliation, when asked for
    #: CPU seconds per process role over the measured window (benchmarks.cpu).
    cpu: dict[str, float] = field(default_factory=dict)
    window_s: float = 0.0  # the measured window's wall seconds
    #: CPU seconds of the pipeline's Spark JVM per part (its threads by name) over it.
    jvm: dict[str, float] = field(default_factory=dict)
    #: Per table serving no target: commits in the window and the longest gap (s).
    cadence: dict[str, tuple[int, float]] = field(default_factory=dict)


def lake_settings(home: Path, bootstrap: str, store: S3Info | None) -> Settings:
    """The settings of a run's home: its broker, a free metastore port, the lake (local or S3)."""
    if store is None:
        return Settings(home=home, catalog=CatalogConfig(),
                        kafka=KafkaConfig(bootstrap=bootstrap),
                        metastore=MetastoreConfig(port=free_port()))
    return Settings(home=home, catalog=CatalogConfig(warehouse=f"s3://{store.bucket}/fresh"),
                    kafka=KafkaConfig(bootstrap=bootstrap),
                    metastore=MetastoreConfig(port=free_port()),
                    s3=S3Config(endpoint=store.endpoint, path_style_access=True))


def _storage_env(settings: Settings) -> dict[str, str]:
    """The pipeline's environment for a lake on S3 (its keys are in this process's)."""
    if settings.s3.endpoint is None:
        return {}
    return {"ICETIDE_CATALOG__WAREHOUSE": settings.warehouse,
            "ICETIDE_S3__ENDPOINT": settings.s3.endpoint, "ICETIDE_S3__PATH_STYLE_ACCESS": "true"}


@contextlib.contextmanager
def _store(home: Path, storage: str) -> Iterator[S3Info | None]:
    """An S3-compatible store for the run (its keys exported to this process and so to
    the pipeline), or none."""
    if storage == "local":
        yield None
        return
    with EmbeddedS3(home / "s3") as info:
        os.environ.update(info.env())
        yield info


def keep_log(home: Path, dest: Path) -> bool:
    """Copy the pipeline log of a run in ``home`` to ``dest`` (its temporary home goes
    with the run; the log is where the time went). False when there was none."""
    log = home / "pipeline.log"
    if not log.exists():
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(log, dest)
    return True


@contextlib.contextmanager
def pipeline_process(settings: Settings, shop: Any, src: Path, load: Load, once: bool = False,
                     *, verbose: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """``icetide run`` of ``src``'s checkout's clickstream pipeline (``-v``: INFO logs), its
    output appended to ``<home>/pipeline.log``; terminated at the end."""
    env = {**shop.pipeline_env(), **_storage_env(settings), **load.env,
           "ICETIDE_HOME": str(settings.home),
           "ICETIDE_KAFKA__BOOTSTRAP": str(settings.kafka.bootstrap),
           "ICETIDE_METASTORE__PORT": str(settings.metastore.port),
           "ICETIDE_SPARK__DRIVER_MEMORY": "4g", "PYTHONPATH": str(src)}
    pipeline = src.parent / "examples" / "clickstream"  # the checkout's own pipeline
    cmd = [sys.executable, "-m", "icetide.cli", *(["-v"] if verbose else []), "run",
           str(pipeline), "--conf", "clickstream.dims=cdc"]
    if load.trigger:
        cmd += ["--trigger-interval", str(load.trigger)]
    if once:
        cmd.append("--once")
    log = open(settings.home / "pipeline.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _probe_loop(bootstrap: str, stop: threading.Event, out: list[Probe],
                topic: str = TOPIC) -> None:
    """One probe click a second to ``topic`` until ``stop``, with its partition and offset."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    n = 0
    while not stop.wait(1.0):
        now = int(time.time() * 1000)
        event = {"cookieId": "probe", "expendTime": 1, "webpageId": 1, "uid": "probe",
                 "productId": f"probe-{n}", "updateTime": now}

        def delivered(err: Any, msg: Any, at: int = now) -> None:
            if err is None:
                out.append(Probe(msg.partition(), msg.offset(), at))
        producer.produce(topic, json.dumps(event).encode(), on_delivery=delivered)
        producer.flush(5)
        n += 1


def _backlog(catalog: Any, client: WatermarkClient) -> int:
    high = {p: h for p, (_, h) in client.watermarks().items()}
    done = commits(catalog, *ODS)
    (end,) = done[-1].end.values() if done else ({},)
    return sum(h - int(end.get(str(p), 0)) for p, h in high.items())


def _wait_for_layers(catalog: Any, proc: subprocess.Popen[bytes]) -> None:
    """Until every measured layer has a commit (the pipeline is up and warm)."""
    from benchmarks.freshness.trace import LAYERS

    deadline = time.monotonic() + WARMUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the pipeline exited with {proc.returncode}; see pipeline.log")
        try:
            if all(commits(catalog, *tf) for tf in LAYERS.values()):
                return
        except Exception:  # tables not created yet
            pass
        time.sleep(2)
    raise SystemExit(f"no commit in every layer after {WARMUP_S:.0f}s; see pipeline.log")


def _drain(catalog: Any, probes: list[Probe]) -> None:
    deadline = time.monotonic() + DRAIN_S
    while time.monotonic() < deadline:
        if all(v is not None for v in freshness(catalog, probes[-3:])["DWS"]):
            return
        time.sleep(2)


def measure(home: Path, load: Load, src: Path, sampler: Sampler | None = None, *,
            finish: Finish | None = None, reconcile: bool = False) -> RunResult:
    """The run: warm up, produce for ``load.seconds`` with probes, drain, trace; with
    ``reconcile`` then stop the pipeline, drain it with ``--once`` and reconcile the lake
    like the demo does (ODS vs produced, dimensions vs MariaDB, layers vs recomputation)."""
    from icetide.devkit.demo.shop import shop_database
    from icetide.runtime.catalogs import pyiceberg_catalog

    home.mkdir(parents=True)
    with _store(home, load.storage) as store, embedded_broker(load.broker, home / "broker"
                                                              ) as broker:
        bs = broker.bootstrap
        settings = lake_settings(home, bs, store)
        produce_clicks(bs, TOPIC, GenOptions(count=WARMUP_CLICKS, partitions=load.partitions,
                                             seed=1))
        with shop_database(settings, None) as shop:
            with pipeline_process(settings, shop, src, load) as proc:
                os.environ["ICETIDE_METASTORE__PORT"] = str(settings.metastore.port)
                catalog = pyiceberg_catalog(settings)
                _wait_for_layers(catalog, proc)
                warm = produce_clicks(bs, TOPIC, GenOptions(
                    count=0, rate=load.rate, duration=load.warmup, seed=3)) if load.warmup else None
                meter = _meter(settings, proc, broker)
                threads = JvmThreadMeter(lambda: [p for p in meter.roles["pipeline"]()
                                                  if is_java(p)])
                began, began_ms = time.monotonic(), int(time.time() * 1000)
                meter.start()
                threads.start()
                result = _produce(catalog, bs, shop, load, sampler)
                result.cpu, result.window_s = meter.stop(), time.monotonic() - began
                result.jvm = threads.stop()
                result.cadence = {t: cadence(catalog, t, began_ms, int(time.time() * 1000))
                                  for t in UNTARGETED}
                result.clicks += warm.valid if warm is not None else 0
                _drain(catalog, result.probes)
                result.freshness = freshness(catalog, result.probes)
                if finish is not None:
                    finish(catalog, result)
            if reconcile:
                result.checks = _reconcile(settings, shop, src, load, result.clicks)
        stop_metastore(settings)  # the pipeline started the home's catalog service
    return result


def _meter(settings: Settings, proc: subprocess.Popen[bytes], broker: Embedded) -> CpuMeter:
    """The pipeline process tree, the home's metastore service (its Python process and
    JVM: the pipeline started it, so it is taken out of the pipeline's tree), the broker
    and this harness process (its generator threads)."""
    from icetide.runtime.metastore.service import running

    service = running(settings)  # up since the warm-up: its pid stays
    service_pid = service.pid if service is not None else None

    def metastore() -> list[int]:
        return descendants(service_pid) if service_pid is not None else []

    return CpuMeter({"pipeline": lambda: sorted(set(descendants(proc.pid)) - set(metastore())),
                     "metastore": metastore,
                     "broker": lambda: [broker.pid] if broker.pid else [],
                     "harness": lambda: [os.getpid()]})


def _reconcile(settings: Settings, shop: Any, src: Path, load: Load, clicks: int) -> list[Any]:
    from icetide.devkit.demo.report import LakeCounts
    from icetide.devkit.demo.runner import reconcile_lake
    from icetide.runtime.session import get_spark

    with pipeline_process(settings, shop, src, load, once=True) as proc:
        proc.wait()
    spark = get_spark(settings)
    return list(reconcile_lake(spark, settings.catalog.name, LakeCounts(clicks, 0), shop))


def _produce(catalog: Any, bs: str, shop: Any, load: Load, sampler: Sampler | None
             ) -> RunResult:
    result, stop, reports = RunResult(), threading.Event(), []
    workers = [
        threading.Thread(target=_probe_loop, args=(bs, stop, result.probes), daemon=True),
        threading.Thread(target=run_business_updates, args=(
            shop.connect, BusinessOptions(rate=2.0, seed=7), stop), daemon=True),
        threading.Thread(target=lambda: reports.append(produce_clicks(bs, TOPIC, GenOptions(
            count=0, rate=load.rate, duration=load.seconds, seed=2))), daemon=True),
    ]
    for worker in workers:
        worker.start()
    marks = WatermarkClient(TOPIC, bs)
    began = time.monotonic()
    try:
        while time.monotonic() - began < load.seconds:
            time.sleep(10)
            result.backlog.append(_backlog(catalog, marks))
            if sampler is not None:
                sampler(catalog, time.monotonic() - began, result)
    finally:
        marks.close()
    stop.set()
    for worker in workers:
        worker.join()
    result.clicks = WARMUP_CLICKS + sum(r.valid for r in reports) + len(result.probes)
    return result
