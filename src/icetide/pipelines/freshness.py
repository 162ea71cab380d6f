"""Freshness planning (pure): how to refresh a table to meet its freshness target.

Two ways to keep a table fresh:

* ``continuous`` — micro-batches back to back, one every ``trigger_interval`` (or as
  soon as the previous one ends when a batch takes longer). Data is at most
  ``max(trigger, cost) + cost`` seconds old when committed.
* ``scheduled`` — one batch refresh every ``period = target - cost * safety`` seconds.
  Data is at most ``period + cost`` old, which the safety factor keeps under target.

Scheduling only pays off when it runs clearly fewer batches than continuous mode, i.e.
when ``period / max(trigger, cost)`` is large. Switching uses two thresholds
(hysteresis): continuous → scheduled needs ``ratio >= enter_ratio``, scheduled →
continuous happens only when ``ratio < exit_ratio``, so a cost hovering around one
threshold does not flip the mode on every batch.

``cost`` is the measured duration of one refresh, e.g. :func:`ewma` of recent batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from icetide.errors import PipelineError

Mode = Literal["continuous", "scheduled"]
Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class RefreshPlan:
    """The decision: ``interval_s`` is the trigger interval (continuous) or the period."""

    mode: Mode
    interval_s: float
    expected_staleness_s: float | None
    meets_target: bool
    reason: str


def ewma(previous: float | None, sample: float, alpha: float = 0.3) -> float:
    """Exponentially weighted moving average; the first sample starts it."""
    if not 0 < alpha <= 1:
        raise PipelineError(f"ewma alpha={alpha!r} must be in (0, 1], e.g. 0.3")
    return sample if previous is None else alpha * sample + (1 - alpha) * previous


def _check_planner_args(trigger: float, safety: float, enter: float, exit_: float) -> None:
    if trigger <= 0:
        raise PipelineError(f"trigger_interval_s={trigger!r} must be positive, e.g. 5.0")
    if safety < 1:
        raise PipelineError(f"safety={safety!r} must be >= 1 (1.5 leaves half a batch spare)")
    if not enter > exit_ >= 1:
        raise PipelineError(
            f"hysteresis thresholds enter_ratio={enter!r}, exit_ratio={exit_!r}: need "
            "enter_ratio > exit_ratio >= 1, e.g. 2.0 and 1.5"
        )


def plan_refresh(
    target_s: float | None,
    cost_s: float | None,
    *,
    trigger_interval_s: float,
    previous: Mode | None = None,
    safety: float = 1.5,
    enter_ratio: float = 2.0,
    exit_ratio: float = 1.5,
) -> RefreshPlan:
    """Choose continuous or scheduled refresh for a table; see the module docstring."""
    _check_planner_args(trigger_interval_s, safety, enter_ratio, exit_ratio)
    if target_s is None:
        return RefreshPlan("continuous", trigger_interval_s, None, True, "no freshness target")
    if cost_s is None:
        return RefreshPlan(
            "continuous", trigger_interval_s, None, True, "no refresh cost measured yet"
        )
    return _decide(target_s, cost_s, trigger_interval_s, safety, threshold=(
        exit_ratio if previous == "scheduled" else enter_ratio
    ))


def _decide(
    target_s: float, cost_s: float, trigger_s: float, safety: float, threshold: float
) -> RefreshPlan:
    cadence = max(trigger_s, cost_s)
    period = target_s - cost_s * safety
    ratio = period / cadence
    if period > 0 and ratio >= threshold:
        return RefreshPlan(
            "scheduled", period, period + cost_s, period + cost_s <= target_s,
            f"a refresh every {period:.3g}s meets the {target_s:g}s target with "
            f"{ratio:.2g}x fewer batches than continuous",
        )
    staleness = cadence + cost_s
    why = (
        f"the {target_s:g}s target leaves no room for scheduling (period {period:.3g}s, "
        f"ratio {ratio:.2g} < {threshold:g})"
    )
    if staleness > target_s:
        why += f"; even continuous data is {staleness:.3g}s old: the target is too tight"
    return RefreshPlan("continuous", trigger_s, staleness, staleness <= target_s, why)


def freshness_status(achieved_s: float, target_s: float | None, warn_s: float | None) -> Status:
    """``fail`` above the target, ``warn`` above the warning threshold, else ``ok``."""
    if target_s is not None and achieved_s > target_s:
        return "fail"
    if warn_s is not None and achieved_s > warn_s:
        return "warn"
    return "ok"


class RefreshPlanner:
    """Keeps one table's cost EWMA and last mode, so callers only report batch durations."""

    def __init__(
        self,
        target_s: float | None,
        *,
        trigger_interval_s: float,
        safety: float = 1.5,
        alpha: float = 0.3,
    ) -> None:
        _check_planner_args(trigger_interval_s, safety, 2.0, 1.5)
        self.target_s = target_s
        self.trigger_interval_s = trigger_interval_s
        self.safety = safety
        self.alpha = alpha
        self.cost_s: float | None = None
        self.mode: Mode | None = None

    def observe(self, batch_seconds: float) -> RefreshPlan:
        """Fold one measured refresh duration into the cost and return the new plan."""
        if batch_seconds < 0:
            raise PipelineError(f"batch duration {batch_seconds!r}s must not be negative")
        self.cost_s = ewma(self.cost_s, batch_seconds, self.alpha)
        return self.plan()

    def plan(self) -> RefreshPlan:
        """The current plan (continuous until a cost has been observed)."""
        plan = plan_refresh(
            self.target_s, self.cost_s, trigger_interval_s=self.trigger_interval_s,
            previous=self.mode, safety=self.safety,
        )
        self.mode = plan.mode
        return plan
