"""``icetide gen clicks``: the seed's DataGen2 click events, produced to Kafka."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.progress import Progress

from icetide.cli.options import config_option, settings_from
from icetide.devkit.gen.clicks import GenOptions, GenReport, ensure_topic, produce_clicks


@click.group()
def gen() -> None:
    """Generate test data."""


@contextmanager
def _stop_on_sigint() -> Iterator[threading.Event]:
    """An event set by Ctrl-C (only in the main thread; elsewhere it is never set)."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _progress(total: int | None) -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(TextColumn("clicks"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]} ev/s"), TimeElapsedColumn(),
                    transient=total is None)


def _produce(target: str, topic: str, options: GenOptions, properties: dict[str, str]
             ) -> GenReport:
    """Run the generator with a progress bar; Ctrl-C ends it cleanly."""
    total = options.count or None
    with _stop_on_sigint() as stop, _progress(total) as bar:
        task = bar.add_task("clicks", total=total, rate="-")
        began = time.monotonic()

        def show(sent: int) -> None:
            elapsed = max(time.monotonic() - began, 1e-9)
            bar.update(task, completed=sent, rate=f"{sent / elapsed:,.0f}")

        return produce_clicks(target, topic, options, properties=properties, progress=show,
                              stop=stop)


@gen.command("clicks")
@click.option("--bootstrap", default=None, metavar="HOST:PORT",
              help="Kafka bootstrap (default: kafka.bootstrap or 127.0.0.1:<embedded_port>).")
@click.option("--topic", default="clicktopic", show_default=True)
@click.option("-c", "--count", type=click.IntRange(min=0), default=1_000_000, show_default=True,
              help="Events to send; 0 = until Ctrl-C or --duration.")
@click.option("-s", "--sleep", "sleep_ms", type=click.FloatRange(min=0), default=0.0,
              show_default=True, help="Milliseconds to sleep after every 1000 events (seed's -s).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Target events per second (default: as fast as possible).")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop after this many seconds.")
@click.option("--bad-ratio", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Fraction of malformed events (bad JSON, wrong types, missing fields).")
@click.option("--partitions", type=click.IntRange(min=1), default=3, show_default=True,
              help="Partitions of the topic when it has to be created.")
@click.option("--seed", "random_seed", type=int, default=None, help="Random seed (reproducible).")
@config_option
def clicks(bootstrap: str | None, topic: str, count: int, sleep_ms: float, rate: float | None,
           duration: float | None, bad_ratio: float, partitions: int, random_seed: int | None,
           config_path: Path | None) -> None:
    """Send the seed's click events (DataGen2) to a Kafka topic."""
    from icetide.errors import SourceError
    from icetide.sources.kafka.client import resolve_bootstrap
    from icetide.sources.kafka.source import check_topic

    settings = settings_from(config_path)
    target = resolve_bootstrap(settings.kafka, bootstrap)
    check_topic(topic)
    options = GenOptions(count=count, rate=rate, sleep_ms=sleep_ms, duration=duration,
                         bad_ratio=bad_ratio, partitions=partitions, seed=random_seed)
    ensure_topic(target, topic, partitions, settings.kafka.properties)  # before the progress bar
    report = _produce(target, topic, options, settings.kafka.properties)
    click.echo(
        f"sent {report.total} events to {topic} on {target} ({report.valid} valid, "
        f"{report.malformed} malformed) in {report.seconds:.2f}s: {report.rate:,.0f} events/s"
    )
    if report.delivery_errors:
        raise SourceError(
            f"{report.delivery_errors} of {report.total} events were not delivered to {topic} "
            f"on {target}: check the broker log and retry"
        )
