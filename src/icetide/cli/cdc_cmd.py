"""``icetide cdc``: operate change-data-capture flows."""

from __future__ import annotations

from pathlib import Path

import click

from icetide.cli.options import config_option, context_from


@click.group()
def cdc() -> None:
    """Operate CDC flows (MySQL/MariaDB binlog)."""


@cdc.command("resnapshot")
@click.argument("table")
@config_option
def resnapshot(table: str, config_path: Path | None) -> None:
    """Make the CDC flow of TABLE (db.table) copy its tables again on its next run.

    Use it after the flow stopped because its binlog position was purged. Run it while
    the pipeline is stopped; the reset is one atomic commit on the flow's table.
    """
    done = context_from(config_path).resnapshot(table)
    click.echo(f"flow {done.flow}: position of {done.source} reset (was {done.previous}); "
               f"the next `icetide run` empties and re-snapshots its tables")
