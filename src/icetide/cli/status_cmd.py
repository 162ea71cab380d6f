"""``icetide status [PIPELINE_DIR]``: freshness, last commits, dead letters, lag per table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from icetide.cli.options import conf_option, config_option, context_from, optional_pipeline_dir
from icetide.cli.render import status_table


@click.command()
@optional_pipeline_dir
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
@click.option("--wide", is_flag=True,
              help="Every column (rows and dead letters of the last commit, refresh mode, "
                   "expectations, files), nothing cut; the default is compact.")
@click.option("--lag/--no-lag", default=True, show_default=True,
              help="Ask each source how far the committed position is behind (all at once, "
                   "2 s at most: a source that does not answer shows as unknown).")
@click.option("--check", is_flag=True,
              help="Exit with code 1 when a table misses its freshness target (monitoring).")
@conf_option
@config_option
def status(pipeline_dir: Path | None, fmt: str, wide: bool, lag: bool, check: bool,
           conf: dict[str, str], config_path: Path | None) -> None:
    """Show each table's last commit, data freshness vs its target, dead letters held and
    source lag; --wide adds the last commit's rows and dead letters, the refresh mode,
    expectation counts and files (--format json: every figure).

    Without PIPELINE_DIR: every table of the lake (targets as the flows recorded them).
    With it: the pipeline's tables and their declared freshness targets. Reads table
    metadata only (no Spark, no data scan).
    """
    if wide and fmt == "json":
        raise click.UsageError("--wide is for --format table: --format json has every figure")
    ctx = context_from(config_path, pipeline_dir, conf)
    rows = ctx.status(lag=lag)
    if fmt == "json":
        click.echo(json.dumps([r.to_json() for r in rows], indent=2, default=str))
    else:
        table = status_table(rows, catalog=ctx.catalog_service().address, wide=wide)
        # without a terminal nothing wraps (for data use --format json)
        Console(width=None if sys.stdout.isatty() else 100_000).print(table)
    if check and any(r.state == "fail" for r in rows):
        raise SystemExit(1)
