"""Maintenance of the tables a continuous run writes: which are due, one pass on one.

The scheduler's API: ``due(now)`` lists the tables whose policy ``interval`` elapsed,
``run(table)`` does one maintenance pass (conflicts with the run's own writers are
retried, then yielded: a flow's commit always wins, see :mod:`icetide.maintainer`).
The pipeline scheduler (:mod:`icetide.engine.scheduler`) runs the passes in a slot of
their own, in Spark's scheduler pool ``maintenance``, skipping tables whose writer is in
a batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from icetide.config import MaintenanceConfig
from icetide.flows.loop import Flow
from icetide.maintainer import AnyReport, Maintainer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icetide.engine.run import PipelineRun
    from icetide.pipelines.spec import PipelineDefaults

log = logging.getLogger(__name__)

#: Seconds the flows' markers (consumer positions) read for one pass are reused by the
#: next passes: far below any retention, so a position can only be older than it was.
MARKS_TTL = 30.0


def written_tables(flows: list[Flow]) -> list[str]:
    """Targets and side tables (dead letters, changelogs) of ``flows``, in order."""
    out: dict[str, None] = {}
    for flow in flows:
        out.update(dict.fromkeys(flow.writes()))
    return list(out)


def run_policy(config: MaintenanceConfig, defaults: PipelineDefaults) -> MaintenanceConfig:
    """The run's base policy: the config's ``maintenance:`` under the pipeline file's
    ``defaults.maintenance`` (a table's own ``maintenance=`` goes over both, per pass)."""
    return config.with_overrides(defaults.maintenance, "defaults.maintenance")


def staggered(tables: list[str], started: float,
              interval: Callable[[str], float]) -> dict[str, float]:
    """First pass of each table, spread over its first interval (the k-th of n tables at
    k/n of it): passes that all fell due together would hold the maintenance slot (and
    Spark's cores) for minutes at a time while every flow waits behind them."""
    n = max(1, len(tables))
    return {t: started + interval(t) * (k + 1) / n for k, t in enumerate(tables)}


class MaintenanceSchedule:
    """Maintenance of the tables ``run``'s flows write, each on its own interval."""

    def __init__(self, spark: SparkSession, run: PipelineRun,
                 clock: Callable[[], float] = time.time, *,
                 on_maintained: Callable[[AnyReport], None] | None = None) -> None:
        self.spark = spark
        self.on_maintained = on_maintained
        base = run_policy(run.settings.maintenance, run.graph.spec.defaults)
        self.maintainer = Maintainer(spark, run.settings, catalog=run.catalog, policy=base)
        self.enabled = base.enabled
        self.tables = written_tables(run.compile_all())
        self._clock = clock
        self._marks_at = float("-inf")
        #: table → when its next pass is due.
        self._next = staggered(self.tables, clock(), self._interval)

    def _interval(self, table: str) -> float:
        try:
            return self.maintainer.policy(table).interval
        except Exception as exc:  # unreadable policy: the default, and say so in the pass
            log.warning("maintenance policy of %s: %s", table, exc)
            return self.maintainer.base.interval

    def due(self, now: float) -> list[str]:
        """Tables whose interval elapsed, most overdue first."""
        if not self.enabled:
            return []
        return sorted((t for t, at in self._next.items() if at <= now), key=self._next.__getitem__)

    def run(self, table: str) -> AnyReport | None:
        """One pass on ``table``; a failure is logged (a pass never stops the run)."""
        self._next[table] = self._clock() + self._interval(table)
        try:
            now = self._clock()
            if now - self._marks_at >= MARKS_TTL:  # every table's markers: read once per batch
                self.maintainer.marks(refresh=True)
                self._marks_at = now
            report = self.maintainer.run(table)
        except Exception as exc:
            log.warning("maintenance of %s failed (next try in one interval): %s", table, exc)
            return None
        log.info("maintained %s", report.summary())
        if self.on_maintained is not None:
            self.on_maintained(report)
        return report
