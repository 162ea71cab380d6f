"""Stopping promptly: one process-wide stop request that every wait honours.

``icetide run`` calls :func:`request_stop` on SIGINT/SIGTERM. Retry loops and readiness
polls (:mod:`icetide.runtime.retry`), the generators' pacing and the scheduler's idle time
wait with :func:`pause` instead of ``time.sleep``: it returns early and raises
:class:`Interrupted` once a stop is requested, so a run that is backing off from an
unreachable broker or database still ends within a second.
"""

from __future__ import annotations

import threading
import time

_STOP = threading.Event()
#: A wait that also watches an event of the caller's looks at the stop request this often.
WATCH_S = 0.05


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


def pause(seconds: float, woken: threading.Event | None = None, *,
          interruptible: bool = True) -> None:
    """Wait ``seconds``; raise :class:`Interrupted` if a stop is (or gets) requested.

    ``woken``: an event of the caller's that ends the wait early when set (a generator's
    own stop, a batch that ended); a stop request is then looked at every
    ``WATCH_S`` seconds. Not ``interruptible``: a stop request does not end the wait (a
    loop with a stop of its own, which it looks at after each wait).
    """
    if not interruptible:
        (woken or threading.Event()).wait(seconds)
        return
    if woken is None:
        if _STOP.wait(seconds):
            raise Interrupted()
        return
    deadline = time.monotonic() + seconds
    while not _STOP.is_set():
        left = deadline - time.monotonic()
        if woken.wait(max(0.0, min(left, WATCH_S))) or left <= WATCH_S:
            return
    raise Interrupted()
