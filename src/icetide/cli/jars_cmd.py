"""``icetide jars``: the JVM dependencies by Maven coordinates — list, resolve, copy."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from icetide.app.jars import JarListing
from icetide.cli.options import config_option, context_from, text_or_json


def _size(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.1f} MB"


def _show(listing: JarListing, fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(dataclasses.asdict(listing), indent=2))
        return
    state = "resolved" if listing.resolved else "NOT resolved (run `icetide jars resolve`)"
    click.echo(f"jars from {listing.source}: {state}")
    for row in listing.rows:
        mark = "*" if row.used else " "
        kind = "" if row.pinned else "  (transitive)"
        click.echo(f"{mark} {row.group:<9} {row.coordinate}{kind}")
        click.echo(f"    {row.path or 'missing'}  {_size(row.bytes)}")
    used = sum(r.bytes or 0 for r in listing.rows if r.used)
    click.echo(f"* on the class path of this configuration's Spark sessions ({used / 1e6:.1f} MB)")


@click.group(invoke_without_command=True)
@text_or_json
@config_option
@click.pass_context
def jars(ctx: click.Context, fmt: str, config_path: Path | None) -> None:
    """The JVM dependencies (Iceberg runtime, Kafka source, S3, PostgreSQL driver) by Maven
    coordinates: without a sub-command, list them and their files (resolves nothing).

    The pinned list is icetide/runtime/jars.toml; `make install` runs `icetide jars
    resolve`. Air-gapped or on a cluster: `icetide jars copy DIR` on a machine that has
    them, then set jars.dir (ICETIDE_JARS__DIR) to DIR.
    """
    if ctx.invoked_subcommand is None:
        _show(context_from(config_path).jars(), fmt)


@jars.command("list")
@text_or_json
@config_option
def list_(fmt: str, config_path: Path | None) -> None:
    """List the coordinates, their resolved files and sizes (resolves nothing)."""
    _show(context_from(config_path).jars(), fmt)


@jars.command()
@click.option("--force", is_flag=True, help="Resolve again even if the cache has them all.")
@text_or_json
@config_option
def resolve(force: bool, fmt: str, config_path: Path | None) -> None:
    """Download what the jar cache lacks from jars.repository (Maven Central) with the
    transitive dependencies; afterwards no icetide command needs the network for jars."""
    ctx = context_from(config_path)
    if ctx.settings.jars.dir is not None:
        raise click.UsageError(f"jars.dir is set ({ctx.settings.jars.dir}): icetide resolves "
                               "nothing then; unset ICETIDE_JARS__DIR / jars.dir to resolve")
    _show(ctx.jars(force=force) if force else ctx.jars(resolve=True), fmt)


@jars.command()
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@text_or_json
@config_option
def copy(dest: Path, fmt: str, config_path: Path | None) -> None:
    """Copy every jar (all groups, transitive ones too) into DEST with a manifest: point
    jars.dir at it on a machine without network, or ship it to a cluster."""
    _show(context_from(config_path).copy_jars(dest), fmt)


@jars.command()
@click.option("--force", is_flag=True, help="Build it again even if it exists.")
@text_or_json
@config_option
def archive(force: bool, fmt: str, config_path: Path | None) -> None:
    """Build the driver JVM's class archive (AppCDS) for this configuration's class path:
    every later Spark start maps the classes instead of loading them (seconds off each
    start and restart). Runs a small pipeline in a private home once (about a minute);
    `make install` runs it. A changed jar or Java needs a new one (the old one is ignored).
    """
    from icetide.devkit.class_archive.build import build_archive

    def announce(target: Path, log: Path) -> None:
        click.echo(f"building the class archive {target.name} (about a minute; log: {log})",
                   err=True)

    report = build_archive(context_from(config_path).settings, force=force,
                           announce=announce)
    if fmt == "json":
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
        return
    state = f"built in {report.seconds:.0f}s" if report.built else "already built"
    click.echo(f"class archive {report.path}: {state}, {report.bytes / 1e6:.0f} MB, "
               f"{report.jars} jars of icetide on its class path")
