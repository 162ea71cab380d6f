"""Where a batch's time goes: wall-clock seconds per phase and the Spark jobs it started.

The flow loop times its phases (``position``: reading the committed marker, ``plan``,
``transform``, ``check``: the rows/event-time pass, ``dead_letters``, ``write``: the sink
with its commit; a MERGE's figures are observed inside ``write``, on the sink's own read)
and tags its Spark jobs with a job group of its own, so a batch can say
how many jobs it ran even while other flows run concurrently. ``BatchResult.phases`` and
``BatchResult.jobs`` carry the figures to the live view and to ``benchmarks/hops``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_batch_ids = itertools.count(1)


class Phases:
    """Accumulated seconds per named phase of one batch."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - began


class JobCounter:
    """Tags the calling thread's Spark jobs with a fresh job group; counts them after."""

    def __init__(self, spark: SparkSession, flow: str) -> None:
        self.spark = spark
        self.group = f"icetide:{flow}:{next(_batch_ids)}"
        spark.sparkContext.setJobGroup(self.group, f"icetide batch of {flow}")

    def count(self) -> int:
        """Spark jobs started under this batch's group so far."""
        return len(self.spark.sparkContext.statusTracker().getJobIdsForGroup(self.group))

    def close(self) -> None:
        """Untag the thread (its next batch gets a group of its own)."""
        jsc = self.spark.sparkContext._jsc
        if jsc is not None:
            jsc.clearJobGroup()
