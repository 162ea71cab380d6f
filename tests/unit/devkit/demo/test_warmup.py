"""The demo's warm-up: when the measured window opens, and what the report says of it."""

from __future__ import annotations

import threading
import time

from icetide.devkit.demo.report import DemoProgress
from icetide.devkit.demo.warmup import WarmUp, flow_targets
from icetide.flows.loop import BatchResult
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.spec import FlowSpec, PipelineDefaults, PipelineSpec, TableSpec


def _batch(flow: str, rows: int, age_s: float | None) -> BatchResult:
    event = None if age_s is None else int((time.time() - age_s) * 1000)
    return BatchResult(flow=flow, start={}, end={}, rows=rows, rows_in=rows, dlq_rows=0,
                       max_event_time_ms=event, seconds=1.0, caught_up=True)


def test_warm_when_every_flow_committed_and_targeted_ones_meet_their_target() -> None:
    seen: list[str] = []
    warm = WarmUp({"ods": 10.0, "ads": None}, forward=lambda r: seen.append(r.flow))
    warm(_batch("ods", 500, age_s=30.0))  # the first batch: the start's backlog
    warm(_batch("ods", 900, age_s=12.0))  # two batches, but over its target
    assert warm.waiting() == ["ads", "ods"]
    warm(_batch("ads", 0, age_s=None))  # no target: one commit is enough
    warm(_batch("ods", 400, age_s=3.0))
    assert warm.waiting() == []
    report = warm.wait(threading.Event(), limit=5.0)
    assert report.ready and report.not_ready == () and report.batches == {"ads": 1, "ods": 3}
    assert seen == ["ods", "ods", "ads", "ods"]  # every result passed on


def test_a_commit_that_made_nothing_newer_visible_does_not_count_as_freshness() -> None:
    warm = WarmUp({"dws": 10.0})
    warm(_batch("dws", 10, age_s=30.0))
    warm(_batch("dws", 10, age_s=2.0))
    assert warm.waiting() == []
    warm(_batch("dws", 10, age_s=40.0))  # older data re-read: the verdict stands
    assert warm.waiting() == []


def test_rearmed_after_the_edits_it_waits_for_batches_committed_since() -> None:
    warm = WarmUp({"dws": 10.0, "dim": None})
    warm(_batch("dim", 0, age_s=None))
    warm(_batch("dws", 10, age_s=30.0))
    warm(_batch("dws", 10, age_s=8.0))
    first = warm.wait(threading.Event(), limit=1.0)
    assert first.ready and warm.report is first
    warm.rearm()  # the edits: every layer must commit within its target again
    assert warm.waiting() == ["dws"]  # a flow without a target stays warm
    warm(_batch("dws", 10, age_s=6.0))
    assert warm.waiting() == ["dws"]  # one batch since: not yet
    warm(_batch("dws", 10, age_s=3.0))
    again = warm.wait(threading.Event(), limit=1.0)
    assert again.ready and again.batches == {"dim": 1, "dws": 4}
    assert warm.report is first  # the warm-up's own report is kept


def test_the_window_opens_at_the_limit_and_names_the_flows_not_ready() -> None:
    warm = WarmUp({"ods": 10.0, "dim": None})
    warm(_batch("ods", 10, age_s=1.0))
    began = time.monotonic()
    report = warm.wait(threading.Event(), limit=0.5)
    assert time.monotonic() - began >= 0.3
    assert not report.ready and report.not_ready == ("dim", "ods")
    stopped = threading.Event()
    stopped.set()
    assert not WarmUp({"ods": 10.0}).wait(stopped, limit=60.0).ready  # a stop ends it


def test_flow_targets_are_the_tables_targets_of_continuous_flows() -> None:
    def query() -> None:
        return None

    spec = PipelineSpec(name="p", defaults=PipelineDefaults(freshness=30.0))
    tables = {"db.a": TableSpec(name="db.a", freshness=5.0), "db.b": TableSpec(name="db.b")}
    flows = [FlowSpec(name="db.a", target="db.a", query=query),
             FlowSpec(name="db.b", target="db.b", query=query),
             FlowSpec(name="db.fill", target="db.b", query=query, once=True)]
    graph = PipelineGraph(spec=spec, tables=tables, flows={f.name: f for f in flows})
    assert flow_targets(graph, flows) == {"db.a": 5.0, "db.b": 30.0}


def test_the_progress_keeps_the_measured_window() -> None:
    progress = DemoProgress()
    assert progress.window() is None
    progress.enter("warming up")
    progress.open_window()
    assert progress.phase == "running"
    start, now = progress.window() or (0, 0)
    assert start <= now
    progress.close_window()
    assert progress.window() == (start, progress.window_end_ms)
