"""Stopping promptly: one process-wide stop request that every wait honours.

``icetide run`` calls :func:`request_stop` on SIGINT/SIGTERM. Retry loops wait with
:func:`pause` instead of ``time.sleep``: it returns early and raises :class:`Interrupted`
once a stop is requested, so a run that is backing off from an unreachable broker or
database still ends within a second.
"""

from __future__ import annotations

import threading

_STOP = threading.Event()


class Interrupted(KeyboardInterrupt):
    """A stop was requested while waiting. Like Ctrl-C, not a failure: no ``except
    Exception`` (or :class:`~icetide.errors.IcetideError`) takes it for one, and the
    command line exits with 130."""

    def __init__(self) -> None:
        super().__init__("stopped on request while waiting to retry")


def request_stop() -> None:
    """Ask every retry loop of this process to give up at its next wait."""
    _STOP.set()


def clear_stop() -> None:
    """Withdraw a stop request (a process that goes on working after one: tests)."""
    _STOP.clear()


def stop_requested() -> bool:
    """Whether a stop was requested (retrying then gives up at its next failure)."""
    return _STOP.is_set()


def pause(seconds: float) -> None:
    """Wait ``seconds``; raise :class:`Interrupted` if a stop is (or gets) requested."""
    if _STOP.wait(seconds):
        raise Interrupted()
