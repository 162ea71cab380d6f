"""CPU seconds of the processes a benchmark involves (Linux ``/proc``), per role.

A run on two cores shares them between the pipeline (its Python driver, Spark JVM and
Python workers), the metastore, the broker and the harness's own generators: the share
each took over the measured window says where the machine's time went.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (children of all its threads)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo.extend(int(c) for c in task.read_text().split())
            except OSError:
                continue
    return found


#: A role's processes, looked up at each reading (a pipeline's JVM starts late).
Pids = Callable[[], list[int]]


class CpuMeter:
    """CPU seconds per role between :meth:`start` and :meth:`stop`.

    A process that ends inside the window is not counted past its last reading; one that
    starts inside it counts from its start (its earlier time is taken as zero)."""

    def __init__(self, roles: Mapping[str, Pids]) -> None:
        self.roles = dict(roles)
        self._start: dict[str, dict[int, float]] = {}

    def _read(self) -> dict[str, dict[int, float]]:
        return {role: {pid: cpu_seconds(pid) for pid in pids()}
                for role, pids in self.roles.items()}

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> dict[str, float]:
        """Seconds per role since :meth:`start`."""
        return {role: sum(sec - self._start.get(role, {}).get(pid, 0.0)
                          for pid, sec in pids.items())
                for role, pids in self._read().items()}
