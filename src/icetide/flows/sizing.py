"""Batches sized by time: a continuous flow's batch is cut where it would outlast about
half its table's freshness target.

A capped batch leaves the rest to the next one, which the scheduler starts at once; so a
flow that finds a backlog (a restart after an outage, a burst) commits within seconds and
catches up in steady steps, each bounded in memory, instead of reading the whole backlog
into one batch that commits minutes later. The cap is in the source's records: the
flow's throughput (records in per second of batch) times the seconds allowed.

Throughput is learnt from the flow's own batches. A batch that filled its cap measures it
(moving average); one that took all there was only raises it, since its fixed costs
(planning, the commit) weigh more on few records than on many. At a restart the newest
marker's ``rows-in`` and ``batch-ms`` seed it, at :data:`COLD_SHARE` of that rate: a new
process's first batch pays for a cold JVM (class loading, JIT) that the marker's warm batch
did not. Per batch the cap moves at most ×4 up and ÷2 down, never below :data:`FLOOR` nor
above the flow's own ``max_records``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Records a time-sized batch may always take, however slow the flow was.
FLOOR = 1_000
#: Records per second assumed before the flow has any history (no batch, no marker).
INITIAL_RATE = 10_000.0
GROWTH, SHRINK, SMOOTHING = 4.0, 0.5, 0.5
#: The share of a marker's (warm) rate a restarted flow's first batch is sized with.
COLD_SHARE = 0.5


@dataclass
class BatchSizer:
    """The records cap of a flow's next batch. ``ceiling``: the flow's ``max_records``
    (``None``: none)."""

    ceiling: int | None = None
    rate: float | None = None  # records per second of batch
    last_cap: int | None = None  # the time-sized cap of the previous batch

    def seed(self, rows_in: int, batch_ms: int | None) -> None:
        """Take the throughput of the batch a marker records, when none is known yet."""
        if self.rate is None and batch_ms and rows_in > 0:
            self.rate = COLD_SHARE * rows_in * 1000.0 / batch_ms

    def cap(self, seconds: float | None) -> int | None:
        """Records the next batch may take to last about ``seconds`` (``None``: no time
        bound, the ceiling alone)."""
        if seconds is None or seconds <= 0:
            return self.ceiling
        wanted = (self.rate or INITIAL_RATE) * seconds
        if self.last_cap is not None:
            wanted = min(max(wanted, self.last_cap * SHRINK), self.last_cap * GROWTH)
        sized = max(FLOOR, int(wanted))
        self.last_cap = sized
        return sized if self.ceiling is None else min(sized, self.ceiling)

    def observe(self, rows_in: int, seconds: float, *, filled: bool) -> None:
        """Fold in a committed batch: ``filled`` when it took as many records as allowed."""
        if rows_in <= 0 or seconds <= 0:
            return
        measured = rows_in / seconds
        if self.rate is None:
            self.rate = measured
        elif filled:
            self.rate = SMOOTHING * measured + (1 - SMOOTHING) * self.rate
        else:
            self.rate = max(self.rate, measured)
