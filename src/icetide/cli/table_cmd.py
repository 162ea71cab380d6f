"""``icetide table``: one table's lifecycle in the lake (refresh)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from icetide.cli.options import config_option, context_from, text_or_json


@click.group()
def table() -> None:
    """One table's lifecycle: rebuild it from its inputs."""


@table.command("refresh")
@click.argument("name", metavar="TABLE")
@click.option("--downstream", is_flag=True,
              help="Also every table whose flows read TABLE, transitively.")
@text_or_json
@config_option
def refresh(name: str, downstream: bool, fmt: str, config_path: Path | None) -> None:
    """Empty TABLE (db.table) and make its flows rebuild it from what their input tables
    hold, on the next `icetide run`.

    For a flow that stopped on a change it cannot read (equality deletes, a rollback, an
    expired position) or a table that is wrong. Run it while the pipeline is stopped.
    Tables fed by Kafka or CDC cannot be rebuilt this way (a CDC table: `icetide cdc
    resnapshot`). The tables below TABLE take the rebuild as changes; --downstream
    rebuilds them too.
    """
    done = context_from(config_path).refresh(name, downstream=downstream)
    if fmt == "json":
        click.echo(json.dumps([asdict(d) for d in done], indent=2))
        return
    for request in done:
        flows = ", ".join(request.flows) or "none committed yet"
        click.echo(f"{request.table}: emptied ({request.rows:,} rows); flows reset: {flows}")
    click.echo("the next `icetide run` rebuilds them from their inputs")
