"""``icetide status [PIPELINE_DIR]``: freshness, last commits, dead letters, lag per table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from icetide.cli.options import config_option, settings_from
from icetide.cli.render import status_table


@click.command()
@click.argument("pipeline_dir", required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
@click.option("--lag/--no-lag", default=True, show_default=True,
              help="Ask each source how far the committed position is behind.")
@click.option("--check", is_flag=True,
              help="Exit with code 1 when a table misses its freshness target (monitoring).")
@config_option
def status(pipeline_dir: Path | None, fmt: str, lag: bool, check: bool,
           config_path: Path | None) -> None:
    """Show each table's last commit, data freshness vs its target, dead letters,
    expectation counts and source lag.

    Without PIPELINE_DIR: every table of the lake (targets as the flows recorded them).
    With it: the pipeline's tables and their declared freshness targets. Reads table
    metadata only (no Spark, no data scan).
    """
    from icetide.app.lag import LagProbes
    from icetide.app.status import collect_status, pipeline_scope
    from icetide.runtime.catalogs import pyiceberg_catalog

    settings = settings_from(config_path)
    catalog = pyiceberg_catalog(settings)
    tables, targets, sources = None, None, {}
    if pipeline_dir is not None:
        from icetide.app.lag import pipeline_sources
        from icetide.pipelines import load_pipeline

        graph = load_pipeline(pipeline_dir)
        tables, targets = pipeline_scope(graph)
        sources = pipeline_sources(graph, settings)
    probes = LagProbes(settings, catalog, sources) if lag else None
    try:
        rows = collect_status(catalog, tables, targets=targets, lag=probes)
    finally:
        if probes is not None:
            probes.close()
        for src in sources.values():
            src.close()
    if fmt == "json":
        click.echo(json.dumps([r.to_json() for r in rows], indent=2, default=str))
    else:
        Console(width=None if sys.stdout.isatty() else 200).print(status_table(rows))
    if check and any(r.state == "fail" for r in rows):
        raise SystemExit(1)
