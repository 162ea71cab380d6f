"""The marker of a batch, built when the sink asks for its commit properties.

A sink that reads the batch before committing (a MERGE) asks after that read, when the
row count and newest event time observed on it are known (:mod:`icetide.flows.stats`);
the marker's commit time and achieved freshness are then taken as close to the commit as
they can be.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from icetide.flows.context import BatchContext
from icetide.flows.stats import Observed, Stats
from icetide.model.keys import MarkerExtra
from icetide.model.markers import Marker
from icetide.model.positions import Position


@dataclass(frozen=True)
class Span:
    """A batch's source range and when it began (``time.monotonic()``)."""

    start: Mapping[str, Position]
    end: Mapping[str, Position]
    began: float


def inputs_newest_event(ctx: BatchContext) -> int | None:
    """For a table without an event-time column (an aggregate, a view): the newest event
    its inputs reflect as of this batch's end — its freshness."""
    found = [ctx.sources[key].newest_event_ms(batch.end)
             for key, batch in ctx.batches.items() if key in ctx.sources]
    return max((f for f in found if f is not None), default=None)


@dataclass
class Marking:
    """What a batch's marker is built from; :meth:`props` builds it (kept in ``marker``).

    ``extra``: marker extra keys (the loop's and the checker's); ``measure``: the figures,
    or how they are being observed; ``event_time_column``: without one, the newest event
    is the inputs' (:func:`inputs_newest_event`).
    """

    flow: str
    ctx: BatchContext
    span: Span
    rows_in: int
    dlq_rows: int
    extra: Mapping[str, str]
    measure: Stats | Observed
    event_time_column: str | None
    marker: Marker | None = None

    def props(self) -> Mapping[str, str]:
        """The marker's snapshot-summary keys (built now: after the sink's first read)."""
        figures = self.measure.get() if isinstance(self.measure, Observed) else self.measure
        newest = figures.newest_ms
        if newest is None and self.event_time_column is None:
            newest = inputs_newest_event(self.ctx)
        now = int(time.time() * 1000)
        extra = dict(self.extra)
        if newest is not None:
            extra[MarkerExtra.FRESHNESS_ACHIEVED_MS] = str(now - newest)
        self.marker = Marker(self.flow, self.span.start, self.span.end, rows=figures.rows,
                             rows_in=self.rows_in,
                             dlq_rows=self.dlq_rows, max_event_time_ms=newest,
                             batch_ms=int((time.monotonic() - self.span.began) * 1000),
                             committed_at_ms=now, extra=extra)
        return self.marker.to_summary()
