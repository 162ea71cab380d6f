"""``icetide catalog``: the catalog service every engine finds the lake's tables in."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from icetide.app.catalog import GLUE_NOTE, CatalogService
from icetide.cli.options import config_option, context_from, text_or_json
from icetide.runtime.catalog_migrate import Migrated


def _show(svc: CatalogService, fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(dataclasses.asdict(svc), indent=2))
        return
    state = "running" if svc.running else "stopped"
    where = f" (pid {svc.pid}, log {svc.log})" if svc.pid else ""
    if svc.type == "glue":
        click.echo(f"catalog {svc.name!r}: glue, warehouse {svc.warehouse}: {GLUE_NOTE}")
        return
    click.echo(f"catalog {svc.name!r}: {svc.type} at {svc.uri or svc.warehouse}, {state}{where}")
    if svc.embedded and svc.running:
        click.echo(f"  Spark:     spark.sql.catalog.{svc.name}.type=hive, "
                   f".uri={svc.uri}\n"
                   f"  pyiceberg: load_catalog({svc.name!r}, type='hive', uri={svc.uri!r})\n"
                   f"  Trino:     connector.name=iceberg, iceberg.catalog.type=hive_metastore, "
                   f"hive.metastore.uri={svc.uri} (whole file: icetide trino catalog)")


@click.group()
def catalog() -> None:
    """The lake's catalog service (icetide's Hive Metastore when catalog.type is hive
    without a uri): start it, see it, stop it, migrate a Hadoop-catalog lake into it."""


@catalog.command()
@text_or_json
@config_option
def start(fmt: str, config_path: Path | None) -> None:
    """Start this home's metastore unless it runs, and print its URI.

    It listens on 127.0.0.1:9083, or on a free port when 9083 is taken and metastore.port
    is not set. It runs detached and serves every icetide process and other engines
    (Spark, Trino, Flink, pyiceberg) until `icetide catalog stop`, until its home is
    deleted, or after metastore.idle_timeout without clients; `icetide run` starts it too.
    """
    _show(context_from(config_path).start_catalog(), fmt)


@catalog.command()
@text_or_json
@config_option
def status(fmt: str, config_path: Path | None) -> None:
    """Show the catalog's type and URI and whether icetide's metastore runs."""
    _show(context_from(config_path).catalog_service(), fmt)


@catalog.command()
@config_option
def stop(config_path: Path | None) -> None:
    """Stop this home's metastore (flows of this home cannot commit until it runs again),
    and its embedded S3 store (s3.embedded: the lake of `icetide demo --storage s3`)."""
    from icetide.app.context import Context
    from icetide.config import load_settings
    from icetide.devkit.demo.storage import stop_embedded_store

    settings = load_settings(config_path)  # not settings_from: it would start the store
    stopped = Context(settings).stop_catalog()
    click.echo(f"stopped the metastore at {stopped.uri} (pid {stopped.pid})" if stopped
               else "the metastore was not running")
    if settings.s3.embedded:
        pid = stop_embedded_store(settings)
        click.echo(f"stopped the S3 store (pid {pid})" if pid
                   else "the S3 store was not running")


@catalog.command()
@click.option("--warehouse", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="The Hadoop-catalog warehouse (default: this home's).")
@click.option("--dry-run", is_flag=True, help="Show what would be registered; change nothing.")
@text_or_json
@config_option
def migrate(warehouse: Path | None, dry_run: bool, fmt: str, config_path: Path | None) -> None:
    """Register every table of a Hadoop-catalog lake into the configured catalog.

    Nothing is copied: each table keeps its files, snapshots and the flows' positions.
    Stop the pipeline first; afterwards use only the new catalog for these tables.
    """
    def progress(item: Migrated) -> None:
        if fmt == "text":
            click.echo(f"{item.outcome:>18}  {item.table}  ({item.metadata_location})")

    done = context_from(config_path).migrate_catalog(warehouse, dry_run=dry_run,
                                                      progress=progress)
    if fmt == "json":
        click.echo(json.dumps([dataclasses.asdict(m) for m in done], indent=2))
    else:
        new = sum(m.outcome == "registered" for m in done)
        click.echo(f"{len(done)} table(s): {new} registered, {len(done) - new} unchanged")
