"""Options shared by commands."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import click

from icetide.app.context import Context
from icetide.config import Settings, load_settings

F = TypeVar("F", bound=Callable[..., object])


def config_option(fn: F) -> F:
    """``--config PATH``: the YAML settings file (default ./icetide.yaml or $ICETIDE_CONFIG)."""
    return click.option(
        "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
        help="Settings file (default: ./icetide.yaml or $ICETIDE_CONFIG).",
    )(fn)


#: ``--format text|json`` of the commands that print a record (catalog, jars, trino)
text_or_json = click.option("--format", "fmt", type=click.Choice(["text", "json"]),
                            default="text", show_default=True, help="Output format.")


#: ``[PIPELINE_DIR]``: the optional pipeline folder of status, dashboard and serve sql
optional_pipeline_dir = click.argument(
    "pipeline_dir", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))


def listen_options(host_help: str, port_help: str) -> Callable[[F], F]:
    """``--host HOST`` and ``--port PORT`` of a command that serves (``None``: the
    setting's value)."""
    def add(fn: F) -> F:
        fn = click.option("--port", type=click.IntRange(0, 65535), default=None,
                          metavar="PORT", help=port_help)(fn)
        return click.option("--host", default=None, metavar="HOST", help=host_help)(fn)
    return add


def settings_from(config_path: Path | None) -> Settings:
    """Load settings for a command; a lake on the embedded store (``s3.embedded``: the S3
    demo's) gets its store started unless it runs, and its endpoint and credentials."""
    settings = load_settings(config_path)
    if settings.s3.embedded:
        from icetide.devkit.demo.storage import embedded_store

        return embedded_store(settings)
    return settings


def context_from(config_path: Path | None, pipeline_dir: Path | None = None,
                 conf: Mapping[str, str] | None = None) -> Context:
    """The application context a command works on."""
    return Context(settings_from(config_path), pipeline_dir, dict(conf or {}))


def _parse_conf(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
                ) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE (e.g. clickstream.dims=cdc)")
        out[key.strip()] = value
    return out


def conf_option(fn: F) -> F:
    """``--conf KEY=VALUE`` (repeatable): overrides the pipeline's ``configuration:``."""
    return click.option(
        "--conf", "conf", multiple=True, metavar="KEY=VALUE", callback=_parse_conf,
        help="Override a key of the pipeline's configuration: (repeatable), "
             "e.g. --conf clickstream.dims=cdc.",
    )(fn)
