"""CPU per part of a restarted pipeline, sampled from its spawn on.

On two cores a restart is CPU-bound: the time to the first ODS commit is how the cores
were shared on the way there. Every :data:`TICK_S` a background thread reads the CPU
seconds so far of the pipeline's process tree, split into parts: the Spark JVM by its
threads (:func:`benchmarks.cpu.jvm_thread_part`: task threads, garbage collector, JIT
compilers, the driver's own threads), the Python driver (the ``icetide run`` process)
and every other process below it (Python workers, the launcher). :meth:`CpuTimeline.at`
answers the parts at a moment, e.g. the first ODS commit. A thread or process that
ended keeps its last reading.
"""

from __future__ import annotations

import bisect
import threading
import time

from benchmarks.cpu import JVM_PARTS, JvmThreadMeter, cpu_seconds, descendants, is_java

PY_DRIVER, PY_WORKERS = "Python driver", "Python workers and launcher"
PARTS = (*JVM_PARTS, PY_DRIVER, PY_WORKERS)
TICK_S = 0.25


class CpuTimeline:
    """Samples the CPU per part of process ``root`` and everything below it."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._times: list[float] = []  # epoch seconds of each sample
        self._parts: list[dict[str, float]] = []
        self._java: list[int] = []  # the tree's JVMs at the current sample
        self._jvm = JvmThreadMeter(lambda: self._java)
        self._others: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-timeline", daemon=True)

    def __enter__(self) -> CpuTimeline:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(TICK_S)

    def _sample(self) -> None:
        driver, self._java = 0.0, []
        for pid in descendants(self.root):
            if pid == self.root:
                driver = cpu_seconds(pid)
            elif is_java(pid):
                self._java.append(pid)
            else:
                self._others[pid] = max(self._others.get(pid, 0.0), cpu_seconds(pid))
        parts = {**dict.fromkeys(PARTS, 0.0), **self._jvm.read()}
        parts[PY_DRIVER] = driver or (self._parts[-1][PY_DRIVER] if self._parts else 0.0)
        parts[PY_WORKERS] = sum(self._others.values())
        self._times.append(time.time())
        self._parts.append(parts)

    def at(self, epoch: float) -> dict[str, float]:
        """CPU seconds per part from the spawn to the last sample at or before ``epoch``."""
        index = bisect.bisect_right(self._times, epoch) - 1
        return dict(self._parts[index]) if index >= 0 else dict.fromkeys(PARTS, 0.0)
