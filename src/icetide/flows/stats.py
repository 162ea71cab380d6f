"""A batch output's row count and newest event time, which its marker records.

Either counted by a Spark job of their own (:func:`count`), or observed (:class:`Observed`)
while the sink reads the batch anyway: a MERGE sink collapses and probes every row before
it commits, and Spark's ``Dataset.observe`` gathers aggregates during whatever action runs
the observed plan, so the figures come with that job instead of costing one more.

Spark hands observed metrics to a query listener on its listener bus, shortly after the
action returns: :meth:`Observed.get` waits for them (bounded), and counts the rows itself
when they never come (an action that did not run the observed plan). :func:`count`, whose
job is its own, reads metrics observed further down its plan (the rows a decoder rejected)
from that job's query execution as soon as it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icetide.lake.observation import OBSERVE_WAIT, observed
from icetide.tables.sql import quote_ident as q

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Stats:
    """Rows of a batch's output and its newest event time (ms since the epoch)."""

    rows: int
    newest_ms: int | None
    #: counts observed on the way (``Dataset.observe``; name → value), see :func:`count`
    observed: Mapping[str, int] = field(default_factory=dict)


def _aggregates(column: str | None) -> list[Column]:
    from pyspark.sql import functions as F

    rows = F.count(F.lit(1)).alias("rows")
    if column is None:
        return [rows]
    newest = F.max(F.expr(f"unix_millis(CAST({q(column)} AS TIMESTAMP))")).alias("newest")
    return [rows, newest]


def _stats(values: dict[str, object]) -> Stats:
    rows, newest = values["rows"], values.get("newest")
    assert isinstance(rows, int)
    return Stats(rows, newest if isinstance(newest, int) else None)


def count(out: DataFrame, column: str | None, observe: Sequence[str] = ()) -> Stats:
    """Rows of ``out`` and the newest value of its event-time ``column``: one Spark job.

    ``observe``: names of single-count metrics observed on frames ``out`` derives from
    (e.g. the rows a decoder rejected); those the job ran through come back in
    :attr:`Stats.observed`, read synchronously from the job's own query execution.
    """
    agg = out.agg(*_aggregates(column))
    row = agg.collect()[0]
    stats = _stats(row.asDict())
    if not observe:
        return stats
    metrics = agg._jdf.queryExecution().observedMetrics()
    found: dict[str, int] = {}
    for name in observe:
        value = metrics.get(name)
        if value.isDefined():
            found[name] = int(value.get().getLong(0))
    return Stats(stats.rows, stats.newest_ms, found)


class Observed:
    """``out`` with its row count and newest event time gathered by the first action that
    reads it (:attr:`df`); :meth:`get` returns them once that action has run."""

    def __init__(self, out: DataFrame, column: str | None) -> None:
        from pyspark.sql import Observation

        self._obs: Observation = Observation()
        self._column = column
        self.df = out.observe(self._obs, *_aggregates(column))

    def get(self, wait: float = OBSERVE_WAIT) -> Stats:
        """The figures observed, waiting up to ``wait`` seconds for Spark to deliver them;
        counted by a job of its own when they do not come."""
        values = observed(self._obs, "observed row count", wait)
        if "rows" not in values:
            # not delivered, or completed without figures: the action that completed it
            # did not run the observing node (adaptive execution can drop it, e.g. over
            # an input found empty at run time, as on a cluster with AQE on)
            log.info("no observed row count: counting the batch")
            return count(self.df, self._column)
        return _stats(values)
