"""``icetide seed dims``: load the seed's dimension rows into the lake."""

from __future__ import annotations

from pathlib import Path

import click

from icetide.cli.options import config_option, settings_from


@click.group()
def seed() -> None:
    """Load the seed's reference data into the lake."""


@seed.command("dims")
@config_option
def dims(config_path: Path | None) -> None:
    """Create dim_db.products and dim_db.user_member with the seed's rows (idempotent).

    A stand-in for the MySQL CDC flow: use it when no MariaDB/MySQL source is configured.
    """
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.runtime.session import get_spark

    settings = settings_from(config_path)
    counts = load_seed_dimensions(get_spark(settings), settings.catalog.name)
    for table, n in counts.items():
        click.echo(f"{table}: {n} seed rows upserted")
