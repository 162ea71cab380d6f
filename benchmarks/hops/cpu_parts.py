"""CPU-ms of one batch per part and per phase, for ``python -m benchmarks.hops``.

Each phase of the flow loop (:class:`icetide.flows.timing.Phases`) is wrapped, in this
benchmark's process only, so that it also reads the CPU counters (``/proc``) of the
processes a batch involves: the Python driver (this process), the Spark JVM (per thread,
by the thread's name: Spark's task threads, the garbage collector's, the JIT compilers'
and the rest — the driver's own work: analysis and planning, job scheduling, Iceberg's
manifests and metadata files, the commit's client side), the Python workers below the
JVM and the metastore service.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.cpu import JVM_PARTS, JvmThreadMeter, cpu_seconds, descendants, is_java

PYTHON, WORKERS, METASTORE = "python driver", "Python workers", "metastore"
#: The rows of the report, in order.
PARTS = (PYTHON, *(f"JVM {part}" for part in JVM_PARTS), WORKERS, METASTORE)
TOTAL = "batch"


class PartMeter:
    """CPU seconds per part, read on demand."""

    def __init__(self, spark: Any, metastore_pid: int | None) -> None:
        self.spark = spark
        self.python = os.getpid()
        self.metastore = metastore_pid
        below = [p for p in descendants(self.python) if p != self.python]
        self.jvm = next(p for p in below if is_java(p) and p != metastore_pid)
        self.threads = JvmThreadMeter(lambda: [self.jvm])
        self.own = 0.0  # CPU seconds the meter's own readings took (not the batch's)

    def read(self) -> dict[str, float]:
        """CPU seconds so far per part; the Python driver's without this meter's own."""
        began = time.thread_time()
        figures = self._read()
        self.own += time.thread_time() - began
        figures[PYTHON] -= self.own
        return figures

    def _read(self) -> dict[str, float]:
        workers = [p for p in descendants(self.jvm) if p != self.jvm]
        parts = {f"JVM {part}": seconds for part, seconds in self.threads.read().items()}
        return {PYTHON: cpu_seconds(self.python), **parts,
                WORKERS: sum(cpu_seconds(p) for p in workers),
                METASTORE: cpu_seconds(self.metastore) if self.metastore else 0.0}


def _diff(now: dict[str, float], then: dict[str, float]) -> dict[str, float]:
    return {k: (now[k] - then[k]) * 1000 for k in now}


class PhaseCpu:
    """Wraps ``Phases.__call__`` while active: CPU-ms per phase and part of each batch."""

    def __init__(self, meter: PartMeter) -> None:
        self.meter = meter
        self.per_phase: dict[str, dict[str, float]] = {}
        self._stage = -1

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        from icetide.flows import timing

        original = timing.Phases.__call__
        meter, per_phase = self.meter, self.per_phase

        @contextlib.contextmanager
        def call(phases: Any, name: str) -> Iterator[None]:
            then = meter.read()
            with original(phases, name):
                yield
            spent = _diff(meter.read(), then)
            into = per_phase.setdefault(name, {})
            for part, ms in spent.items():
                into[part] = into.get(part, 0.0) + ms

        timing.Phases.__call__ = call  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            timing.Phases.__call__ = original  # type: ignore[method-assign]

    def batch(self, run: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
        """Run one batch; its result and its CPU-ms as ``"cpu <part> <phase>"`` figures."""
        self.per_phase.clear()
        then = self.meter.read()
        result = run()
        spent = _diff(self.meter.read(), then)
        per_phase = {**self.per_phase, TOTAL: spent}
        return result, {f"cpu {part} {phase}": ms for phase, parts in per_phase.items()
                        for part, ms in parts.items()}


def cpu_table(figures: dict[str, dict[str, float]]) -> str:
    """Per hop (its large batches' medians): CPU-ms per part, per phase and in total."""
    phases = sorted({k.rsplit(" ", 1)[1] for f in figures.values() for k in f
                     if k.startswith(f"cpu {PYTHON} ")} - {TOTAL})
    rows = ["| hop | part | " + " | ".join(phases) + " | whole batch |",
            "| --- | --- |" + " ---: |" * (len(phases) + 1)]
    for hop, f in figures.items():
        for part in PARTS:
            cells = [f"{f.get(f'cpu {part} {p}', 0.0):.0f}" for p in (*phases, TOTAL)]
            rows.append(f"| {hop} | {part} | " + " | ".join(cells) + " |")
        total = sum(f.get(f"cpu {part} {TOTAL}", 0.0) for part in PARTS)
        rows.append(f"| {hop} | **all** | " + " | ".join(
            f"{sum(f.get(f'cpu {part} {p}', 0.0) for part in PARTS):.0f}" for p in phases)
            + f" | **{total:.0f}** |")
    return "\n".join(rows)


def cpu_compare(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> str:
    """Per hop (its large batches' medians): CPU-ms of the whole batch per part, before →
    after, and the ratio of the totals."""
    rows = ["| hop | " + " | ".join(PARTS) + " | **all** | ratio |",
            "| --- |" + " ---: |" * (len(PARTS) + 2)]
    for hop in after:
        was, now = before.get(hop, {}), after[hop]
        cells = [f"{was.get(f'cpu {p} {TOTAL}', 0.0):.0f} → {now.get(f'cpu {p} {TOTAL}', 0.0):.0f}"
                 for p in PARTS]
        total_was = sum(was.get(f"cpu {p} {TOTAL}", 0.0) for p in PARTS)
        total_now = sum(now.get(f"cpu {p} {TOTAL}", 0.0) for p in PARTS)
        ratio = f"{total_now / total_was:.2f}" if total_was else "-"
        rows.append(f"| {hop} | " + " | ".join(cells)
                    + f" | **{total_was:.0f} → {total_now:.0f}** | {ratio} |")
    return "\n".join(rows)
