from __future__ import annotations

import pytest

from icetide.errors import PipelineError
from icetide.pipelines.freshness import (
    RefreshPlanner,
    ewma,
    freshness_status,
    plan_refresh,
)


def test_no_target_or_no_cost_means_continuous() -> None:
    assert plan_refresh(None, 3.0, trigger_interval_s=5).mode == "continuous"
    plan = plan_refresh(60.0, None, trigger_interval_s=5)
    assert (plan.mode, plan.interval_s, plan.reason) == (
        "continuous", 5, "no refresh cost measured yet")


def test_loose_target_is_scheduled() -> None:
    plan = plan_refresh(600.0, 10.0, trigger_interval_s=5, safety=1.5)
    assert plan.mode == "scheduled"
    assert plan.interval_s == pytest.approx(585.0)  # target - cost * safety
    assert plan.expected_staleness_s == pytest.approx(595.0)
    assert plan.meets_target


def test_tight_target_is_continuous() -> None:
    plan = plan_refresh(10.0, 2.0, trigger_interval_s=5)
    assert (plan.mode, plan.interval_s) == ("continuous", 5)
    assert plan.expected_staleness_s == pytest.approx(7.0)  # max(5, 2) + 2
    assert plan.meets_target


def test_unreachable_target_is_flagged() -> None:
    plan = plan_refresh(10.0, 8.0, trigger_interval_s=5)
    assert plan.mode == "continuous"
    assert not plan.meets_target
    assert "too tight" in plan.reason


def test_hysteresis_prevents_flapping() -> None:
    # cadence 5s; ratio = (target - 1.5*cost) / 5. Pick cost so the ratio sits at 1.7:
    # between exit (1.5) and enter (2.0).
    target, cost = 5 * 1.7 + 1.5 * 1.0, 1.0
    assert plan_refresh(target, cost, trigger_interval_s=5).mode == "continuous"
    assert plan_refresh(target, cost, trigger_interval_s=5, previous="continuous").mode == (
        "continuous")
    assert plan_refresh(target, cost, trigger_interval_s=5, previous="scheduled").mode == (
        "scheduled")
    # Clearly outside the band the previous mode does not matter.
    assert plan_refresh(100.0, 1.0, trigger_interval_s=5, previous="continuous").mode == (
        "scheduled")
    assert plan_refresh(8.0, 1.0, trigger_interval_s=5, previous="scheduled").mode == (
        "continuous")


def test_planner_argument_checks() -> None:
    with pytest.raises(PipelineError, match="trigger_interval_s"):
        plan_refresh(10.0, 1.0, trigger_interval_s=0)
    with pytest.raises(PipelineError, match="safety"):
        plan_refresh(10.0, 1.0, trigger_interval_s=1, safety=0.5)
    with pytest.raises(PipelineError, match="enter_ratio > exit_ratio"):
        plan_refresh(10.0, 1.0, trigger_interval_s=1, enter_ratio=1.2, exit_ratio=1.5)


def test_ewma() -> None:
    assert ewma(None, 4.0) == 4.0
    assert ewma(4.0, 8.0, alpha=0.5) == 6.0
    with pytest.raises(PipelineError, match="alpha"):
        ewma(1.0, 1.0, alpha=0)


def test_refresh_planner_tracks_cost_and_mode() -> None:
    planner = RefreshPlanner(120.0, trigger_interval_s=5, alpha=0.5)
    assert planner.plan().mode == "continuous"  # nothing measured yet
    assert planner.observe(2.0).mode == "scheduled"  # (120 - 3) / 5 = 23.4
    for _ in range(10):
        plan = planner.observe(60.0)  # refreshes got slow: 120 - 90 = 30 / 60 < 1.5
    assert plan.mode == "continuous"
    assert planner.cost_s == pytest.approx(60.0, rel=0.01)
    with pytest.raises(PipelineError, match="must not be negative"):
        planner.observe(-1)


@pytest.mark.parametrize(
    ("achieved", "target", "warn", "status"),
    [
        (5.0, 10.0, 8.0, "ok"),
        (8.0, 10.0, 8.0, "ok"),
        (9.0, 10.0, 8.0, "warn"),
        (10.0, 10.0, 8.0, "warn"),
        (10.5, 10.0, 8.0, "fail"),
        (10.5, 10.0, None, "fail"),
        (9.0, 10.0, None, "ok"),
        (1e9, None, None, "ok"),
        (9.0, None, 8.0, "warn"),
    ],
)
def test_freshness_status(achieved: float, target: float | None, warn: float | None,
                          status: str) -> None:
    assert freshness_status(achieved, target, warn) == status
