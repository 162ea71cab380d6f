"""``icetide serve sql``: the lake over HiveServer2 (JDBC/ODBC, PyHive, beeline)."""

from __future__ import annotations

import signal
import socket
import threading
from pathlib import Path
from types import FrameType

import click

from icetide.cli.options import (
    conf_option,
    config_option,
    context_from,
    listen_options,
    optional_pipeline_dir,
)


@click.group()
def serve() -> None:
    """Serve the lake to other tools."""


def _wait_for_signal() -> None:
    """Block until Ctrl-C or SIGTERM."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not stop.wait(1.0):
        pass


@serve.command("sql")
@optional_pipeline_dir
@listen_options(
    host_help="Address to listen on (default: sql_server.host, 127.0.0.1). Anything "
              "but loopback needs ICETIDE_SQL_SERVER__PASSWORD.",
    port_help="TCP port (default: sql_server.port, 10000; 0: a free port).")
@conf_option
@config_option
def sql(pipeline_dir: Path | None, host: str | None, port: int | None,
        conf: dict[str, str], config_path: Path | None) -> None:
    """Start a HiveServer2 (Thrift JDBC/ODBC) SQL endpoint over the lake until Ctrl-C.

    \b
    Clients: JDBC  jdbc:hive2://127.0.0.1:10000/default  (beeline, DBeaver, BI tools),
             ODBC  any HiveServer2 driver (Simba/Cloudera Hive ODBC),
             Python  pyhive.hive.connect(host, port, username=...).
    Tables are named namespace.table (e.g. ods_behavior.clickevent), as in `icetide sql`.
    With ICETIDE_SQL_SERVER__PASSWORD set, clients must log in as sql_server.user
    (default icetide) with that password. With PIPELINE_DIR, the pipeline is checked and
    its tables are listed. See docs/connect.md.
    """
    ctx = context_from(config_path, pipeline_dir, conf)
    # a refusal (IcetideError: no password off loopback, port taken) exits with code 2
    tables = ([n for n, t in sorted(ctx.graph.tables.items()) if not t.is_view]
              if pipeline_dir is not None else [])
    server = ctx.serve_sql(host, port)
    with server:
        auth = (f"user {server.user!r} with the password from ICETIDE_SQL_SERVER__PASSWORD"
                if server.auth == "password" else "no password: any user name")
        click.echo(f"SQL server (HiveServer2) listening; JDBC URL: {server.jdbc_url}")
        click.echo(f"  login: {auth}; catalog {server.catalog!r}")
        click.echo(f"  beeline -u {server.jdbc_url}"
                   + (f" -n {server.user} -p <password>" if server.auth == "password" else ""))
        if server.host in ("0.0.0.0", "::"):
            click.echo(f"  all addresses: clients name this machine, e.g. jdbc:hive2://"
                       f"{socket.getfqdn()}:{server.port}/default")
        if tables:
            click.echo("  tables: " + ", ".join(tables))
        click.echo("Ctrl-C to stop", err=True)
        _wait_for_signal()
    click.echo("SQL server stopped", err=True)
