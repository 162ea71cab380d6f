"""Options shared by commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from icetide.config import Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])


def config_option(fn: F) -> F:
    """``--config PATH``: the YAML settings file (default ./icetide.yaml or $ICETIDE_CONFIG)."""
    return click.option(
        "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
        help="Settings file (default: ./icetide.yaml or $ICETIDE_CONFIG).",
    )(fn)


def settings_from(config_path: Path | None) -> Settings:
    """Load settings for a command."""
    return load_settings(config_path)
