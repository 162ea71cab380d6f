"""``icetide dashboard [PIPELINE_DIR]``: the live web page of the lake (no JVM)."""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import click

from icetide.cli.options import (
    conf_option,
    config_option,
    context_from,
    listen_options,
    optional_pipeline_dir,
)


@click.command()
@optional_pipeline_dir
@listen_options(
    host_help="Interface to listen on (default: dashboard.host, 127.0.0.1). Any other "
              "than loopback needs ICETIDE_DASHBOARD__TOKEN.",
    port_help="Port to listen on (default: dashboard.port, 8765).")
@click.option("--lag/--no-lag", default=True, show_default=True,
              help="Ask each source how far the committed position is behind.")
@conf_option
@config_option
def dashboard(pipeline_dir: Path | None, host: str | None, port: int | None, lag: bool,
              conf: dict[str, str], config_path: Path | None) -> None:
    """Serve a live web page of the pipeline: the DAG by layer coloured by freshness,
    per table rows, commits/min, freshness vs target over the last hour, expectations,
    dead letters, source lag, flow errors, and a read-only SQL box (DuckDB).

    The page updates itself (server-sent events) with what `icetide status` reads:
    table metadata only, no Spark. Without PIPELINE_DIR: every table of the lake.
    """
    from icetide.web.serve import make_server, options_for, url_of

    ctx = context_from(config_path, pipeline_dir, conf)
    cfg = ctx.settings.dashboard
    bind_host = host or cfg.host
    bind_port = cfg.port if port is None else port
    options = options_for(ctx, lag)
    server = make_server(ctx, bind_host, bind_port, options)
    hint = "?token=$ICETIDE_DASHBOARD__TOKEN" if options.token else ""
    click.echo(f"icetide dashboard: {url_of(bind_host, bind_port)}{hint} (Ctrl-C to stop)")
    # Ctrl-C / SIGTERM: open pages' event streams end, the server returns, and uvicorn
    # raises the signal again once it has stopped: by then it only means "stopped"
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    click.echo("dashboard stopped", err=True)
