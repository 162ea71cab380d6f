"""The freshness pacer: mode choice from measured batch cost, and what it records."""

from __future__ import annotations

from typing import Any

from icetide.engine.pacing import FreshnessPacer, FreshnessTarget, once_summary
from icetide.engine.quality import expectation_counts
from icetide.flows.loop import BatchResult, Flow, FlowLoop
from icetide.model.keys import MarkerExtra
from icetide.pipelines.spec import PipelineDefaults, TableSpec

MODE_KEY = MarkerExtra.FRESHNESS_MODE
TARGET_KEY = MarkerExtra.FRESHNESS_TARGET_MS
WARN_KEY = MarkerExtra.FRESHNESS_WARN_MS


def _loop() -> FlowLoop:
    flow = Flow(name="db.t", target="lake.db.t", sources={}, transform=lambda ctx: None)  # type: ignore[arg-type,return-value]
    spark: Any = None  # the pacer never touches Spark
    return FlowLoop(spark, flow)


def _result(seconds: float) -> BatchResult:
    return BatchResult("db.t", {}, {}, 10, 10, 0, None, seconds, True)


def test_target_comes_from_the_table_else_the_pipeline_defaults() -> None:
    defaults = PipelineDefaults(freshness=300.0, freshness_warn=120.0)
    assert FreshnessTarget.of(TableSpec("db.t", freshness=10.0), defaults) == FreshnessTarget(
        10.0, None)
    assert FreshnessTarget.of(TableSpec("db.t"), defaults) == FreshnessTarget(300.0, 120.0)
    assert FreshnessTarget.of(None, PipelineDefaults()) == FreshnessTarget()


def test_loose_target_switches_to_scheduled_after_a_measured_batch() -> None:
    loop = _loop()
    pacer = FreshnessPacer(loop, FreshnessTarget(60.0, 30.0), trigger_interval_s=2.0)
    assert loop.summary_extra == {MODE_KEY: "continuous", TARGET_KEY: "60000",
                                  WARN_KEY: "30000"}  # nothing measured yet
    interval = pacer(_result(1.0))
    assert pacer.mode == "scheduled"
    assert interval == 60.0 - 1.0 * 1.5  # period = target - cost * safety
    assert loop.summary_extra[MODE_KEY] == "scheduled"
    assert pacer(None) == interval  # an idle batch keeps the plan


def test_tight_target_stays_continuous_at_the_trigger_interval() -> None:
    loop = _loop()
    pacer = FreshnessPacer(loop, FreshnessTarget(5.0), trigger_interval_s=2.0)
    assert pacer(_result(1.0)) == 2.0
    assert pacer.mode == "continuous" and loop.summary_extra[MODE_KEY] == "continuous"


def test_costlier_batches_bring_scheduled_back_to_continuous() -> None:
    loop = _loop()
    pacer = FreshnessPacer(loop, FreshnessTarget(30.0), trigger_interval_s=1.0)
    pacer(_result(1.0))
    assert pacer.mode == "scheduled"
    for _ in range(10):  # the cost EWMA climbs towards 12s: no room left for a schedule
        pacer(_result(12.0))
    assert pacer.mode == "continuous" and loop.summary_extra[MODE_KEY] == "continuous"


def test_no_target_is_always_continuous() -> None:
    loop = _loop()
    pacer = FreshnessPacer(loop, FreshnessTarget(), trigger_interval_s=3.0)
    assert pacer(_result(0.1)) == 3.0
    assert loop.summary_extra == {MODE_KEY: "continuous"}
    assert once_summary(FreshnessTarget(10.0)) == {MODE_KEY: "once", TARGET_KEY: "10000"}


def test_expectation_counts_parse_marker_extra_keys() -> None:
    extra = {"expect.valid uid.passed": "9", "expect.valid uid.failed": "1",
             "expect.valid uid.action": "drop", "expect.dropped": "1",
             "freshness.mode": "once"}
    assert expectation_counts(extra) == {
        "valid uid": {"passed": 9, "failed": 1, "action": "drop"}}
