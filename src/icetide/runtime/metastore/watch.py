"""When a metastore service stops by itself: its home is gone, or no client came for a while.

A service runs detached and outlives the command that started it. Without a watchdog, a
service whose ``ICETIDE_HOME`` was deleted (a script's temporary home) would hold its port
for ever. The service process runs :func:`watch` in a thread; it needs no JVM (the
service passes in how to read its client activity).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

#: Seconds between two looks at the home (and at the client activity).
CHECK_EVERY = 5.0

#: ``(connections open now, connections accepted so far)``.
Activity = Callable[[], tuple[int, int]]


def _identity(path: Path) -> tuple[int, int] | None:
    """The directory's (device, inode), or ``None`` when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _recorded_pid(state: Path) -> int | None:
    try:
        return int(json.loads(state.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Watchdog:
    """Says why the service should stop: its directory gone or replaced (a home deleted
    and made again: its state file no longer names this process), or ``idle_timeout``
    seconds without an open or new connection."""

    def __init__(self, root: Path, state: Path, idle_timeout: float | None,
                 activity: Activity, clock: Callable[[], float] = time.monotonic,
                 pid: int | None = None) -> None:
        self.root, self.state, self.idle_timeout = root, state, idle_timeout
        self._activity, self._clock = activity, clock
        self._pid = os.getpid() if pid is None else pid
        self._home = _identity(root)
        self._accepted = -1
        self._since = clock()

    def reason(self) -> str | None:
        """Why to stop now, or ``None`` to go on."""
        now = _identity(self.root)
        if now is None or now != self._home or _recorded_pid(self.state) != self._pid:
            return f"its home {self.root} is gone (deleted or replaced)"
        if self.idle_timeout is None:
            return None
        open_now, accepted = self._activity()
        if open_now or accepted != self._accepted:
            self._accepted, self._since = accepted, self._clock()
            return None
        idle = self._clock() - self._since
        if idle >= self.idle_timeout:
            return (f"no client for {idle:.0f}s (metastore.idle_timeout: "
                    f"{self.idle_timeout:g}s)")
        return None


def check_interval(idle_timeout: float | None) -> float:
    """How often to look: :data:`CHECK_EVERY`, more often for a short idle timeout."""
    if idle_timeout is None:
        return CHECK_EVERY
    return max(0.5, min(CHECK_EVERY, idle_timeout / 4))


def watch(dog: Watchdog, every: float, stop: threading.Event) -> None:
    """Set ``stop`` once ``dog`` gives a reason (checked every ``every`` seconds)."""
    while not stop.wait(every):
        try:
            reason = dog.reason()
        except Exception as exc:  # reading the activity failed: look again next round
            log.warning("the metastore's watchdog could not read the client activity: %s", exc)
            continue
        if reason is not None:
            log.warning("metastore stopping by itself: %s", reason)
            stop.set()
            return
