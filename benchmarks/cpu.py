"""CPU seconds of the processes a benchmark involves (Linux ``/proc``), per role.

A run on two cores shares them between the pipeline (its Python driver, Spark JVM and
Python workers), the metastore, the broker and the harness's own generators: the share
each took over the measured window says where the machine's time went.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path


def cpu_seconds(pid: int, process: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (0 when it is gone); with ``process``,
    of its thread ``pid``."""
    path = f"/proc/{pid}/stat" if process is None else f"/proc/{process}/task/{pid}/stat"
    try:
        with open(path) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (children of all its threads). A process or
    thread that ends while it is read (a benchmark's ``kill -9``) is passed over."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").glob("*/children"))
        except OSError:
            continue
        for task in tasks:
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


#: A JVM thread's name (``/proc/…/comm``: its first 15 characters) → the part of the
#: JVM's work it does; every other thread is the driver's own (planning, scheduling,
#: commits, metadata, the py4j calls).
JVM_THREAD_PARTS = (("Executor task l", "task threads"), ("GC Thread", "garbage collector"),
                    ("G1 ", "garbage collector"), ("C1 CompilerThre", "JIT compilers"),
                    ("C2 CompilerThre", "JIT compilers"))
JVM_DRIVER = "driver threads"
JVM_PARTS = ("task threads", "garbage collector", "JIT compilers", JVM_DRIVER)


def jvm_thread_part(comm: str) -> str:
    """The part of a JVM's work its thread named ``comm`` does."""
    return next((part for prefix, part in JVM_THREAD_PARTS if comm.startswith(prefix)),
                JVM_DRIVER)


def is_java(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name == "java"
    except OSError:
        return False


def jvm_threads(pid: int) -> dict[int, tuple[str, float]]:
    """Thread id → (part, CPU seconds) of every thread of JVM ``pid``."""
    out: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            comm = (task / "comm").read_text().strip()
        except OSError:
            continue
        out[int(task.name)] = (jvm_thread_part(comm), cpu_seconds(int(task.name), pid))
    return out


class JvmThreadMeter:
    """CPU seconds per part of the JVMs ``pids()`` names, between :meth:`start` and
    :meth:`stop` (a thread born since counts from zero, one that ended keeps its last
    reading when this meter saw it)."""

    def __init__(self, pids: Pids) -> None:
        self.pids = pids
        self._seen: dict[tuple[int, int], tuple[str, float]] = {}
        self._start: dict[str, float] = {}

    def read(self) -> dict[str, float]:
        """CPU seconds so far per part."""
        for pid in self.pids():
            self._seen.update({(pid, tid): v for tid, v in jvm_threads(pid).items()})
        parts = dict.fromkeys(JVM_PARTS, 0.0)
        for part, seconds in self._seen.values():
            parts[part] += seconds
        return parts

    def start(self) -> None:
        self._start = self.read()

    def stop(self) -> dict[str, float]:
        now = self.read()
        return {part: now[part] - self._start.get(part, 0.0) for part in now}
