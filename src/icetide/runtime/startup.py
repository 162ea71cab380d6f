"""Startup phases of a process: when each was first reached, logged once at INFO.

After a crash (``kill -9``) nothing is fresh until the restarted ``icetide run`` commits;
these lines say where that time went, one per phase, in the form::

    startup phase spark_session at 1764240000.123 (+4.21s)

the wall-clock time (epoch seconds) the phase *ended*, and the seconds since the
process started. ``python -m benchmarks.restart`` reads them from the run's log
(``icetide -v run``). A phase is logged the first time only: ``first_commit <flow>``
is the first commit of that flow in this process, not every one.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger(__name__)

#: What every line starts with (the benchmark's parser keys on it).
PREFIX = "startup phase"

_lock = threading.Lock()
_seen: set[str] = set()


def process_started() -> float:
    """Epoch seconds this process started (Linux ``/proc``; else this module's import)."""
    try:
        with open(f"/proc/{os.getpid()}/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as fh:
            boot = next(int(line.split()[1]) for line in fh if line.startswith("btime"))
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED
    return boot + ticks / os.sysconf("SC_CLK_TCK")


_IMPORTED = time.time()
_STARTED = process_started()


def phase(name: str, at: float | None = None, detail: str = "") -> None:
    """Log that phase ``name`` ended at ``at`` (epoch seconds; default now), the first
    time it is reached in this process; ``detail`` is appended (``key=value ...``)."""
    with _lock:
        if name in _seen:
            return
        _seen.add(name)
    when = time.time() if at is None else at
    log.info("%s %s at %.3f (+%.2fs)%s", PREFIX, name, when, when - _STARTED,
             f" {detail}" if detail else "")
