"""Run the whole seed system on the embedded default (``icetide demo``).

1. a private MariaDB under ``<home>/mariadb`` holding the seed's ``user_db`` (seeded on the
   first start only), or — without ``mariadbd`` — the seed rows loaded into the lake;
2. the embedded broker (in memory: fresh on every run; the Kafka source notices the new
   cluster id and reads the new topic from its start);
3. the click generator (the seed's DataGen2, a few malformed) and a stream of random
   business updates on ``user_db`` side by side;
4. the whole ``examples/clickstream`` pipeline (ODS, CDC dimensions, DWD/DWS/ADS) with
   ``clickstream.dims=cdc``, continuously: first a warm-up
   (:mod:`icetide.devkit.demo.warmup`: until every layer has committed and is past the
   start's backlog), then the edits at ODS (:mod:`icetide.devkit.demo.edits`: an erase
   and a correction, until every layer is back within its target; reported, not
   judged), then the measured window of ``duration`` seconds (or until ``stop`` is set);
5. then the generators stop, the flows run on until every layer caught up (no rows
   committed for ``CATCH_UP_QUIET_S``, at most ``CATCH_UP_MAX_S``), one ``run_once`` drains what
   is left (everything produced is in the lake), the window closes and each table with a
   freshness target is judged over it (:func:`icetide.app.status.collect_status`), the lake
   is reconciled (:mod:`icetide.devkit.demo.reconcile`) and MariaDB and the broker are stopped.

A second run on the same ``ICETIDE_HOME`` resumes: the lake and MariaDB persist, every
flow continues from the position committed in its table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from icetide.config import Settings
from icetide.devkit.demo.edits import DemoEdits, Edit
from icetide.devkit.demo.report import (
    BatchCounter,
    DemoProgress,
    DemoReport,
    LakeCounts,
    lake_counts,
)
from icetide.devkit.demo.shop import DEMO_MARIADB_PORT, DimsMode, Shop, choose_dims, shop_database
from icetide.devkit.demo.warmup import WARM_BATCHES, WarmUp, flow_targets, window_freshness
from icetide.devkit.embedded.kinds import Embedded, embedded_broker
from icetide.devkit.embedded.process import free_port, port_in_use
from icetide.devkit.gen.business import BusinessOptions, BusinessReport, run_business_updates
from icetide.devkit.gen.clicks import GenOptions, GenReport, ensure_topic, produce_clicks
from icetide.errors import NotReadyError, PipelineError, listed
from icetide.flows.loop import BatchResult
from icetide.runtime.retry import wait_until

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icetide.devkit.demo.reconcile import Check
    from icetide.engine.run import PipelineRun
    from icetide.pipelines.graph import PipelineGraph

log = logging.getLogger(__name__)

DEMO_TOPIC = "clicktopic"
DIMS_KEY = "clickstream.dims"
HUDI_KEY = "clickstream.hudi"


def find_example(name: str = "clickstream") -> Path:
    """``examples/<name>`` in the current directory or in the source checkout."""
    checkout = Path(__file__).resolve().parents[4]  # <checkout>/src/icetide/devkit/demo/
    candidates = [Path.cwd() / "examples" / name, checkout / "examples" / name]
    for path in candidates:
        if (path / "icetide-pipeline.yml").is_file():
            return path
    raise PipelineError(
        f"cannot find examples/{name} (looked in {listed(candidates)}); run from "
        "the icetide checkout or pass --pipeline PATH"
    )


@dataclass(frozen=True)
class DemoOptions:
    """How long and how fast the demo runs, and where its dimensions come from."""

    duration: float | None = 60.0  # seconds measured, after the warm-up; None: until stop
    rate: float = 2000.0  # click events per second
    bad_ratio: float = 0.01
    business_rate: float = 2.0  # business changes per second (0: none)
    trigger_interval: float = 2.0
    dims: DimsMode = "auto"  # auto: cdc when MariaDB is installed, else seed
    mariadb_port: int | None = DEMO_MARIADB_PORT  # None/0 or taken: a free port
    reconcile: bool = True
    pipeline: Path | None = None
    #: Spark's (JVM) log level for the run, e.g. "ERROR" under the live view; None: as set
    spark_log_level: str | None = None
    #: Serve the lake over HiveServer2 on this port while the demo runs (None: no server)
    sql_port: int | None = None
    #: Seed 002's Hudi twin dim_db.user_member_hudi beside the Iceberg dim_db.user_member
    #: (CDC dimensions only; the session gets the Hudi bundle, ``spark.hudi``)
    hudi: bool = True


def _broker(settings: Settings) -> Embedded:
    """The embedded broker of ``kafka.embedded``, fresh on every run (Apache Kafka's log
    dirs of an earlier demo are removed first, as Tansu keeps nothing)."""
    port = settings.kafka.embedded_port
    if port_in_use(port):
        port = free_port()
    if settings.kafka.embedded == "kafka":
        shutil.rmtree(settings.path("broker"), ignore_errors=True)
    return embedded_broker(settings.kafka.embedded, settings.path("broker"), port)


def _with_broker(settings: Settings, bootstrap: str) -> Settings:
    # earliest: a resumed demo's committed offsets belong to the previous (gone) broker
    return settings.model_copy(update={"kafka": settings.kafka.model_copy(
        update={"bootstrap": bootstrap, "offset_out_of_range": "earliest"})})


def _spark(settings: Settings) -> SparkSession:
    """The session, keeping the caller's Ctrl-C handler: a new SparkContext installs its
    own (cancel every job, raise KeyboardInterrupt), which would break the clean stop."""
    from icetide.runtime.session import get_spark

    if threading.current_thread() is not threading.main_thread():
        return get_spark(settings)
    handler = signal.getsignal(signal.SIGINT)
    try:
        return get_spark(settings)
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def _load_graph(options: DemoOptions, dims: str, shop: Shop | None) -> PipelineGraph:
    from icetide.pipelines import load_pipeline

    env = shop.pipeline_env() if shop is not None else None
    return load_pipeline(options.pipeline or find_example(), env=env,
                         configuration={DIMS_KEY: dims,
                                        HUDI_KEY: str(options.hudi and dims == "cdc").lower()})


def with_hudi(options: DemoOptions, dims: str, settings: Settings) -> bool:
    """Whether the run writes the Hudi twin: asked for, the dimensions come by CDC, and
    the lake is local (Hudi on an S3 warehouse is not tested here)."""
    from icetide.runtime.s3 import uses_s3

    return options.hudi and dims == "cdc" and not uses_s3(settings)


def _run_settings(settings: Settings, bootstrap: str, hudi: bool) -> Settings:
    """The run's settings: the fresh broker, and a session with Hudi for the Hudi twin."""
    found = _with_broker(settings, bootstrap)
    if not hudi or found.spark.hudi:
        return found
    return found.model_copy(update={"spark": found.spark.model_copy(update={"hudi": True})})


class Generators:
    """The click generator and the business updates in threads; ``stop`` ends both, and
    when both have ended by themselves (duration) they set ``stop``."""

    def __init__(self, bootstrap: str, shop: Shop | None, options: DemoOptions,
                 stop: threading.Event, progress: DemoProgress) -> None:
        self.stop = stop
        self.clicks: list[GenReport] = []
        self.business: list[BusinessReport] = []
        self.errors: list[BaseException] = []

        def clicks() -> None:
            self.clicks.append(produce_clicks(
                bootstrap, DEMO_TOPIC,
                GenOptions(count=0, rate=options.rate, bad_ratio=options.bad_ratio,
                           duration=options.duration),
                progress=lambda sent: setattr(progress, "clicks", sent), stop=stop))

        jobs: list[Callable[[], None]] = [clicks]
        if shop is not None and options.business_rate > 0:
            updates = BusinessOptions(rate=options.business_rate, duration=options.duration,
                                      database=shop.database)
            jobs.append(lambda: self.business.append(
                run_business_updates(shop.connect, updates, stop)))
        self.threads = [threading.Thread(target=self._guard, args=(job,), daemon=True,
                                         name=f"demo-gen-{i}") for i, job in enumerate(jobs)]

    def _guard(self, job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException as exc:  # reported by result(); stop the rest of the demo
            log.error("demo generator failed: %s", exc)
            self.errors.append(exc)
            self.stop.set()

    def _watch(self) -> None:
        for thread in self.threads:
            thread.join()
        self.stop.set()

    def start(self) -> None:
        for thread in self.threads:
            thread.start()
        threading.Thread(target=self._watch, name="demo-gen-watch", daemon=True).start()

    def result(self) -> tuple[GenReport, BusinessReport | None]:
        """Wait for both; their reports (raises what a generator raised)."""
        for thread in self.threads:
            thread.join()
        if self.errors:
            raise self.errors[0]
        return self.clicks[0], (self.business[0] if self.business else None)


def _clock(warm: WarmUp, stop: threading.Event, duration: float | None,
           progress: DemoProgress, editor: DemoEdits) -> None:
    """The warm-up, the edits (until every layer is back within its target), then the
    measured window for ``duration`` seconds; ``stop`` ends it. Stopped before the
    window: none opens. A failed edit stops the run (the report raises it)."""
    done = warm.wait(stop)
    if stop.is_set():
        return
    if not done.ready:
        log.warning("demo: warm-up ended after %.0fs with %s not ready; the edits are made "
                    "anyway", done.seconds, listed(done.not_ready))
    progress.open_edits()
    if not editor.make():
        stop.set()
        return
    # batches from the edits' commits on; the first of each flow may have read its input
    # before the edits reached it: one more than the warm-up asks for
    warm.rearm(batches=WARM_BATCHES + 1)
    settled = progress.edits_settled = warm.wait(stop, EDITS_SETTLE_MAX_S)
    if stop.is_set():
        return
    if not settled.ready:
        log.warning("demo: %s not back within the target %.0fs after the edits; the "
                    "measured window opens anyway", listed(settled.not_ready),
                    settled.seconds)
    progress.open_window()
    if duration is not None and not stop.wait(duration):
        stop.set()


def _stream(pipeline: PipelineRun, gens: Generators, stop: threading.Event,
            counter: BatchCounter, progress: DemoProgress, clock: Callable[[], None]
            ) -> tuple[GenReport, BusinessReport | None]:
    """Generators and continuous flows: the warm-up, the measured window, until ``stop``."""
    gens.start()
    progress.enter("warming up")
    flows_stop = threading.Event()
    threading.Thread(target=_catch_up, args=(stop, flows_stop, counter, progress),
                     name="demo-catch-up", daemon=True).start()
    threading.Thread(target=clock, name="demo-clock", daemon=True).start()
    try:
        pipeline.run_forever(flows_stop, counter)
    finally:
        stop.set()  # a failed flow stops the generators too
        flows_stop.set()
        for thread in gens.threads:
            thread.join()
    return gens.result()


#: Seconds the layers have, after the edits, to get back within their targets before the
#: measured window opens anyway (the report then names the flows that were not).
EDITS_SETTLE_MAX_S = 120.0
#: After the generators stop, the continuous flows run on until no batch committed rows
#: for this long (every layer caught up, at its usual freshness), at most CATCH_UP_MAX_S;
#: the drain then has (almost) nothing left to do.
CATCH_UP_QUIET_S = 8.0  # longer than one batch of a busy flow (ODS: 2-4 s)
CATCH_UP_MAX_S = 30.0


def _catch_up(stop: threading.Event, flows_stop: threading.Event, counter: BatchCounter,
              progress: DemoProgress) -> None:
    stop.wait()
    progress.enter("catching up")
    stopped = time.monotonic()
    with contextlib.suppress(NotReadyError):  # still busy: the drain takes over the rest
        wait_until(lambda: flows_stop.is_set() or time.monotonic()
                   - max(stopped, counter.last_rows_at) >= CATCH_UP_QUIET_S,
                   timeout=CATCH_UP_MAX_S, interval=0.2, what="the flows going quiet",
                   interruptible=False)  # its own thread: the demo stops it by ``stop``
    flows_stop.set()


def reconcile_lake(spark: SparkSession, catalog: str, expected: LakeCounts,
                   shop: Shop | None, edits: Sequence[Edit] = (), *,
                   hudi: bool = False) -> list[Check]:
    """ODS/DLQ vs produced (less the erased rows), dimensions vs MariaDB (CDC only; with
    ``hudi`` the Hudi twin too), nothing the edits removed left in DWD, layers vs
    recomputation over ODS."""
    from icetide.devkit.demo.reconcile import (
        check_edit,
        reconcile_dims,
        reconcile_layers,
        reconcile_ods,
    )

    checks = reconcile_ods(spark, catalog, expected.ods, expected.dlq)
    checks += [check_edit(spark, catalog, edit) for edit in edits]
    if shop is not None:
        with contextlib.closing(shop.connect()) as conn:
            checks += reconcile_dims(spark, catalog, conn, shop.database, hudi=hudi)
    checks += reconcile_layers(spark, catalog)
    return checks


def run_demo(settings: Settings, options: DemoOptions, stop: threading.Event,
             on_batch: Callable[[BatchResult], None] | None = None,
             progress: DemoProgress | None = None) -> DemoReport:
    """MariaDB + broker + generators + the clickstream pipeline, then drain and reconcile."""
    from icetide.engine.run import PipelineRun

    progress = progress or DemoProgress()
    dims, warning = choose_dims(options.dims)
    if warning:
        log.warning("%s", warning)
    progress.dims = dims
    options = dataclasses.replace(options, hudi=with_hudi(options, dims, settings))
    with contextlib.ExitStack() as stack:
        shop = (stack.enter_context(shop_database(settings, options.mariadb_port))
                if dims == "cdc" else None)
        graph = _load_graph(options, dims, shop)
        broker = stack.enter_context(_broker(settings))
        run_settings = _run_settings(settings, broker.bootstrap, options.hudi)
        spark = _spark(run_settings)
        if options.spark_log_level:
            spark.sparkContext.setLogLevel(options.spark_log_level)
        pipeline = stack.enter_context(PipelineRun(spark, run_settings, graph,
                                                   trigger_interval=options.trigger_interval))
        if options.sql_port is not None:
            from icetide.serving.thrift import start_sql_server

            stack.enter_context(start_sql_server(spark, run_settings, port=options.sql_port))
        run = _DemoRun(pipeline, broker.bootstrap, shop, options, progress)
        report = run.run(stop, on_batch)
    return report


class _DemoRun:
    """One demo run on a started MariaDB (or none), broker and pipeline."""

    def __init__(self, pipeline: PipelineRun, bootstrap: str, shop: Shop | None,
                 options: DemoOptions, progress: DemoProgress) -> None:
        self.pipeline, self.bootstrap, self.shop = pipeline, bootstrap, shop
        self.options, self.progress = options, progress
        self.spark, self.catalog = pipeline.spark, pipeline.catalog

    def run(self, stop: threading.Event,
            on_batch: Callable[[BatchResult], None] | None) -> DemoReport:
        from icetide.devkit.gen.seed_dims import load_seed_dimensions

        if self.shop is None:
            load_seed_dimensions(self.spark, self.catalog)
        baseline = lake_counts(self.spark, self.catalog)
        # before the first plan: a resumed run reads this fresh broker's topic from its start
        ensure_topic(self.bootstrap, DEMO_TOPIC)
        warm = WarmUp(flow_targets(self.pipeline.graph, self.pipeline.flows), forward=on_batch)
        counter = BatchCounter(warm)
        generated, business, edits = self._stream(stop, warm, counter)
        before, _ = counter.totals()
        self.progress.enter("draining")
        self.pipeline.run_once(counter)
        self.progress.close_window()
        rows, dead = counter.totals()
        log.info("demo drained %d rows after the stop", rows - before)
        checks: list[Check] = []
        if self.options.reconcile:
            self.progress.enter("reconciling")
            erased = sum(e.rows for e in edits if e.removes)
            checks = reconcile_lake(self.spark, self.catalog, LakeCounts(
                baseline.ods + generated.valid - erased, baseline.dlq + generated.malformed),
                self.shop, edits, hudi=self.options.hudi)
        self.progress.enter("done")
        return DemoReport(
            dims=self.progress.dims, generated=generated, business=business,
            baseline=baseline, committed=dict(counter.rows), dead_letters=dead,
            drained_rows=rows - before, checks=checks, settings=self.pipeline.settings,
            seconds=time.monotonic() - self.progress.started, shop=self.shop,
            phase_seconds=self.progress.seconds(), edits=edits, warm_up=warm.report,
            window=self.progress.window(),
            freshness=window_freshness(self.pipeline.settings, self.pipeline.graph,
                                       self.progress.window()),
            edits_window=self.progress.edits_window(),
            edits_settled=self.progress.edits_settled,
            edits_freshness=window_freshness(self.pipeline.settings, self.pipeline.graph,
                                             self.progress.edits_window()))

    def _stream(self, stop: threading.Event, warm: WarmUp, counter: BatchCounter
                ) -> tuple[GenReport, BusinessReport | None, list[Edit]]:
        """The generators (until ``stop``: the clock ends the run after the measured
        window) and the flows; the edits made before the window."""
        gens = Generators(self.bootstrap, self.shop,
                          dataclasses.replace(self.options, duration=None), stop, self.progress)
        editor = DemoEdits(self.spark, self.catalog, stop)
        generated, business = _stream(self.pipeline, gens, stop, counter, self.progress, lambda: (
            _clock(warm, stop, self.options.duration, self.progress, editor)))
        return generated, business, editor.join()
