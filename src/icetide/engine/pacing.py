"""Wire the freshness planner into the flow loop: how long to wait between batches.

Each continuous flow gets a :class:`FreshnessPacer` built from its target's
``freshness``/``freshness_warn`` (or the pipeline defaults). After every batch the loop
hands it the result; the pacer feeds the batch duration to a
:class:`~icetide.pipelines.freshness.RefreshPlanner` and answers the seconds until the
next batch starts: the trigger interval in ``continuous`` mode, the planner's period in
``scheduled`` mode. It also keeps the loop's marker extra keys current, so every commit
records the mode it ran under and the target it is measured against::

    icetide.freshness.mode        continuous | scheduled | once
    icetide.freshness.target-ms   the table's freshness target (when declared)
    icetide.freshness.warn-ms     its warning threshold (when declared)
    icetide.freshness.achieved-ms commit time − newest event time (set by the loop)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from icetide.flows.loop import BatchResult, FlowLoop
from icetide.model.keys import MarkerExtra
from icetide.pipelines.freshness import Mode, RefreshPlanner
from icetide.pipelines.spec import PipelineDefaults, TableSpec

log = logging.getLogger(__name__)

ONCE = "once"


@dataclass(frozen=True)
class FreshnessTarget:
    """A table's freshness target and warning threshold, in seconds (None: not declared)."""

    target_s: float | None = None
    warn_s: float | None = None

    @classmethod
    def of(cls, table: TableSpec | None, defaults: PipelineDefaults) -> FreshnessTarget:
        """The table's own target, else the pipeline's default."""
        if table is None:
            return cls(defaults.freshness, defaults.freshness_warn)
        if table.freshness is not None or table.freshness_warn is not None:
            return cls(table.freshness, table.freshness_warn)
        return cls(defaults.freshness, defaults.freshness_warn)

    def summary(self, mode: str) -> dict[str, str]:
        """Marker extra keys recording ``mode`` and this target."""
        extra = {MarkerExtra.FRESHNESS_MODE: mode}
        if self.target_s is not None:
            extra[MarkerExtra.FRESHNESS_TARGET_MS] = str(int(self.target_s * 1000))
        if self.warn_s is not None:
            extra[MarkerExtra.FRESHNESS_WARN_MS] = str(int(self.warn_s * 1000))
        return extra


class FreshnessPacer:
    """The ``pace`` callback of :meth:`FlowLoop.run_forever` for one flow."""

    def __init__(self, loop: FlowLoop, target: FreshnessTarget, trigger_interval_s: float
                 ) -> None:
        self.loop = loop
        self.target = target
        self.planner = RefreshPlanner(target.target_s, trigger_interval_s=trigger_interval_s)
        self.mode: Mode = self.planner.plan().mode
        loop.summary_extra.update(target.summary(self.mode))

    def retarget(self, target_s: float | None) -> None:
        """Take the table's freshness target set at run time (``icetide table
        set-freshness``) in place of the declared one; ``None``: keep the declared one."""
        if target_s is not None and target_s != self.target.target_s:
            log.info("flow %s: freshness target %s → %.0f s (set on the table)",
                     self.loop.flow.name, self.target.target_s, target_s)
            self.target = replace(self.target, target_s=target_s)

    def __call__(self, result: BatchResult | None) -> float:
        """Fold in the batch's duration; the seconds between this batch's start and the next
        (planned against the table's own target)."""
        return self.plan_for(result, self.target.target_s)

    def plan_for(self, result: BatchResult | None, budget_s: float | None) -> float:
        """As a call, planned against ``budget_s``: the staleness this flow's own hop may
        add (the pipeline scheduler takes out what the hops above it add and keeps room
        for those below it, see :meth:`icetide.engine.scheduler.Slot.budget`)."""
        self.planner.target_s = budget_s
        plan = self.planner.observe(result.seconds) if result is not None else self.planner.plan()
        if plan.mode != self.mode:
            log.info("flow %s: refresh mode %s → %s (%s)", self.loop.flow.name, self.mode,
                     plan.mode, plan.reason)
            self.mode = plan.mode
        self.loop.summary_extra.update(self.target.summary(plan.mode))
        return plan.interval_s

    @property
    def cost_s(self) -> float:
        """The flow's batch duration (moving average; 0 before its first batch)."""
        return self.planner.cost_s or 0.0


def once_summary(target: FreshnessTarget) -> dict[str, str]:
    """Marker extra keys of a ``--once`` run (mode ``once``)."""
    return target.summary(ONCE)
