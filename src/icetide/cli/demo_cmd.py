"""``icetide demo``: the seed pipeline on the embedded default, then a query."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import click

from icetide.cli.options import config_option, settings_from
from icetide.cli.run_cmd import _print_batch
from icetide.config import Settings
from icetide.demo.runner import DemoOptions, DemoReport

SUMMARY_SQL = (
    "SELECT productId, name, product_price, count(*) AS views, count(DISTINCT uid) AS uv "
    "FROM ods_behavior.clickevent GROUP BY productId, name, product_price "
    "ORDER BY views DESC LIMIT 10"
)


def _run(settings: Settings, options: DemoOptions, stop: threading.Event,
         live: bool) -> DemoReport:
    """The demo under the live table (refreshed every second), or one line per batch."""
    from icetide.demo.runner import run_demo

    if not live:
        return run_demo(settings, options, stop, on_batch=_print_batch)
    from rich.console import Console

    from icetide.demo.live import LiveStatus

    with LiveStatus(settings, Console()):
        return run_demo(settings, options, stop)


@click.command()
@click.option("--duration", type=float, default=60.0, show_default=True, metavar="SECONDS",
              help="Stop after this many seconds (0: until Ctrl-C).")
@click.option("--rate", type=float, default=2000.0, show_default=True, metavar="EPS",
              help="Click events generated per second.")
@click.option("--bad-ratio", type=click.FloatRange(0, 1), default=0.01, show_default=True,
              help="Fraction of malformed events (they land in the dead-letter table).")
@click.option("--trigger-interval", type=float, default=2.0, show_default=True,
              metavar="SECONDS", help="Seconds between micro-batches.")
@click.option("--pipeline", type=click.Path(exists=True, path_type=Path), default=None,
              help="Pipeline folder (default: examples/clickstream).")
@click.option("--live/--no-live", default=True, show_default=True,
              help="Live table of the lake refreshed every second (--no-live: one line per "
                   "batch, for CI and logs).")
@config_option
def demo(duration: float, rate: float, bad_ratio: float, trigger_interval: float,
         pipeline: Path | None, live: bool, config_path: Path | None) -> None:
    """Run the seed system end to end with no configuration.

    Starts the embedded Kafka-compatible broker, loads the seed's products and members
    into dim_db, generates click events and runs examples/clickstream until the duration
    ends or Ctrl-C; then prints what landed. The lake stays queryable with `icetide sql`.
    """
    from icetide.query.spark_sql import run_sql
    from icetide.runtime.session import get_spark

    settings = settings_from(config_path)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        click.echo("stopping…", err=True)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    options = DemoOptions(duration=duration or None, rate=rate, bad_ratio=bad_ratio,
                          trigger_interval=trigger_interval, pipeline=pipeline)
    click.echo(f"icetide demo: state in {settings.home.resolve()}; Ctrl-C to stop")
    report = _run(settings, options, stop, live)
    gen = report.generated
    click.echo(f"generated {gen.total} events ({gen.valid} valid, {gen.malformed} malformed) "
               f"at {gen.rate:,.0f} events/s")
    result = run_sql(get_spark(report.settings or settings), SUMMARY_SQL)
    click.echo("views per product (ods_behavior.clickevent):")
    for row in result.rows:
        click.echo("  " + "  ".join("null" if v is None else str(v) for v in row))
    click.echo("query the lake: icetide sql \"SELECT * FROM ods_behavior.clickevent LIMIT 10\"")
