"""Run the seed pipeline end to end on the embedded default.

Starts the embedded broker, loads the seed's dimension rows, produces click events
(the seed's DataGen2, a few malformed), and runs ``examples/clickstream`` continuously
until the duration ends or ``stop`` is set; then drains what is left with one
``--once`` pass so every produced event is in the lake when it returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from icetide.config import Settings
from icetide.embedded.broker import EmbeddedBroker, free_port, port_in_use
from icetide.errors import PipelineError
from icetide.flows.loop import BatchResult
from icetide.gen.clicks import GenOptions, GenReport, ensure_topic, produce_clicks

log = logging.getLogger(__name__)

DEMO_TOPIC = "clicktopic"


def find_example(name: str = "clickstream") -> Path:
    """``examples/<name>`` in the current directory or in the source checkout."""
    candidates = [Path.cwd() / "examples" / name,
                  Path(__file__).resolve().parents[3] / "examples" / name]
    for path in candidates:
        if (path / "icetide-pipeline.yml").is_file():
            return path
    raise PipelineError(
        f"cannot find examples/{name} (looked in {[str(c) for c in candidates]}); run from "
        "the icetide checkout or pass --pipeline PATH"
    )


@dataclass(frozen=True)
class DemoOptions:
    """How long and how fast the demo runs."""

    duration: float | None = 60.0  # seconds; None: until stop is set
    rate: float = 2000.0  # click events per second
    bad_ratio: float = 0.01
    trigger_interval: float = 2.0
    pipeline: Path | None = None


@dataclass(frozen=True)
class DemoReport:
    """What the demo produced and committed."""

    generated: GenReport
    committed_rows: int
    dead_letters: int
    #: the settings the demo ran with (kafka.bootstrap = its broker): get_spark(this)
    settings: Settings | None = None


def _broker(settings: Settings) -> EmbeddedBroker:
    port = settings.kafka.embedded_port
    if port_in_use(port):
        port = free_port()
    return EmbeddedBroker(port, settings.path("broker"))


def _stop_after(gen: threading.Thread, stop: threading.Event) -> None:
    gen.join()
    stop.set()


def run_demo(settings: Settings, options: DemoOptions, stop: threading.Event,
             on_batch: Callable[[BatchResult], None] | None = None) -> DemoReport:
    """Broker + seed dimensions + generator + the clickstream pipeline, then a final drain."""
    from icetide.gen.seed_dims import load_seed_dimensions
    from icetide.pipelines import load_pipeline
    from icetide.pipelines.run import PipelineRun
    from icetide.runtime.session import get_spark

    graph = load_pipeline(options.pipeline or find_example())
    with _broker(settings) as broker:
        run_settings = settings.model_copy(update={"kafka": settings.kafka.model_copy(
            update={"bootstrap": broker.bootstrap, "offset_out_of_range": "earliest"})})
        spark = get_spark(run_settings)
        load_seed_dimensions(spark, run_settings.catalog.name)
        # before the first plan: a re-run resumes committed positions on this fresh broker
        ensure_topic(broker.bootstrap, DEMO_TOPIC)
        generated: list[GenReport] = []
        gen = threading.Thread(target=lambda: generated.append(produce_clicks(
            broker.bootstrap, DEMO_TOPIC,
            GenOptions(count=0, rate=options.rate, bad_ratio=options.bad_ratio,
                       duration=options.duration), stop=stop)), name="demo-gen", daemon=True)
        pipeline = PipelineRun(spark, run_settings, graph,
                               trigger_interval=options.trigger_interval)
        try:
            gen.start()
            threading.Thread(target=_stop_after, args=(gen, stop), daemon=True).start()
            pipeline.run_forever(stop, on_batch)
            gen.join()
            drained = pipeline.run_once(on_batch)
        finally:
            pipeline.close()
    rows = sum(r.rows for results in drained.values() for r in results)
    dlq = sum(r.dlq_rows for results in drained.values() for r in results)
    log.info("demo drained %d rows and %d dead letters after the stop", rows, dlq)
    return DemoReport(generated[0], rows, dlq, run_settings)
