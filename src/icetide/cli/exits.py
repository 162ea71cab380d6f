"""The exit codes of every verb (docs/architecture.md, "The command line").

``0`` success; ``1`` the command ran and found a problem (``dry-run`` errors, ``status
--check`` misses a target, a SQL error); ``2`` icetide refused: bad configuration or
arguments (an :class:`~icetide.errors.IcetideError`, or click's usage errors); ``130``
interrupted.
"""

from __future__ import annotations

from icetide.cli.messages import CliError

OK = 0
PROBLEM = 1
REFUSED = 2
INTERRUPTED = 130


class Refused(CliError):
    """An :class:`~icetide.errors.IcetideError` shown as a one-line CLI error: exit code 2."""

    exit_code = REFUSED
