"""``icetide table``: one table's lifecycle: refresh, suspend, resume, set-freshness."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from icetide.cli.options import config_option, context_from, text_or_json
from icetide.lake.table_state import TableState


@click.group()
def table() -> None:
    """One table's lifecycle in a running pipeline: rebuild it from its inputs, suspend
    and resume its flows, change its freshness target."""


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


def _state_line(name: str, state: TableState) -> str:
    freshness = "as declared" if state.freshness_s is None else f"{state.freshness_s:g} s"
    return (f"{name}: {'suspended' if state.suspended else 'running'}, freshness target "
            f"{freshness} (a running pipeline takes it at its next batch)")


@table.command("suspend")
@click.argument("name", metavar="TABLE")
@config_option
def suspend(name: str, config_path: Path | None) -> None:
    """Suspend the flows into TABLE (db.table) from their next batch on, in a running
    pipeline and in later runs, until `icetide table resume TABLE`."""
    click.echo(_state_line(name, context_from(config_path).suspend(name)))


@table.command("resume")
@click.argument("name", metavar="TABLE")
@config_option
def resume(name: str, config_path: Path | None) -> None:
    """Resume the flows into TABLE: they catch up from where they stopped."""
    click.echo(_state_line(name, context_from(config_path).suspend(name, suspended=False)))


@table.command("set-freshness")
@click.argument("name", metavar="TABLE")
@click.argument("freshness", metavar="DURATION")
@config_option
def set_freshness(name: str, freshness: str, config_path: Path | None) -> None:
    """Set TABLE's freshness target (e.g. "30 seconds", "5m"; "declared": back to what
    the pipeline declares). The scheduler paces its flows by it from their next batch."""
    value = None if freshness.strip().lower() == "declared" else freshness
    click.echo(_state_line(name, context_from(config_path).set_freshness(name, value)))
