"""How the command line reports a failure: one prefix, ``error:``, for icetide's own
errors and click's (a bad option, a missing argument) alike."""

from __future__ import annotations

from typing import IO

import click

PREFIX = "error: "


def echo_error(message: str) -> None:
    """``error: <message>`` on stderr (red on a terminal)."""
    click.secho(f"{PREFIX}{message}", fg="red", err=True)


def show_click_error(exc: click.ClickException) -> None:
    """A click error as click shows it (usage and help hint for a usage error), with
    icetide's prefix instead of click's ``Error:``."""
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        ctx = exc.ctx
        click.echo(ctx.get_usage(), err=True, color=ctx.color)
        click.echo(f"Try '{ctx.command_path} --help' for help.\n", err=True, color=ctx.color)
    echo_error(exc.format_message())


class CliError(click.ClickException):
    """A failure a command reports in one line (exit code 1), with icetide's prefix even
    when the command runs outside :func:`icetide.cli.main.main` (tests, CliRunner)."""

    def show(self, file: IO[str] | None = None) -> None:
        echo_error(self.format_message())
