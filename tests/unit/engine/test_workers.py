"""A worker beyond the first takes a flow only when it would be late
(``flows.extra_workers``), with scripted flow loops (no JVM) as in test_scheduler.py."""

from __future__ import annotations

import time

import pytest

from icetide.config.sections import ExtraWorkers
from icetide.engine.scheduler import Slot
from icetide.engine.workers import below_s, late
from icetide.flows.loop import BatchResult
from tests.unit.engine.test_scheduler import Script, _chain, _Loop, _result, _run, _slot


def _cost(slot: Slot, seconds: float) -> Slot:
    slot.pacer.planner.cost_s = seconds
    return slot


def test_below_is_the_batch_time_of_the_hops_to_the_tightest_target() -> None:
    ods = _cost(_slot(_Loop("ods", None, lambda n: None), 2.0), 0.8)
    dwd = _cost(_slot(_Loop("dwd", "lake.ods", lambda n: None), 2.0), 0.4)
    dws = _cost(_slot(_Loop("dws", "lake.dwd", lambda n: None), 2.0, target=10.0), 0.9)
    side = _cost(_slot(_Loop("side", "lake.dwd", lambda n: None), 2.0), 30.0)  # no target
    _chain([ods, dwd, dws, side])
    assert below_s(ods) == pytest.approx(1.3)  # dwd + dws; not the untargeted side flow
    assert below_s(dws) == 0.0 and below_s(side) == 0.0


def test_late_when_waiting_for_the_first_batch_to_end_misses_the_deadline() -> None:
    ods = _cost(_slot(_Loop("ods", None, lambda n: None), 2.0), 1.0)
    dws = _cost(_slot(_Loop("dws", "lake.ods", lambda n: None), 2.0, target=10.0), 2.0)
    _chain([ods, dws])
    ods.pending_since = 100.0  # deadline 110; its batch and DWS's take 3 s
    assert not late(ods, 104.0, [106.0])  # free at 106, at DWS by 109
    assert late(ods, 104.0, [108.0])  # free at 108: 111
    assert late(ods, 108.0, [])  # nothing running, yet already too late: it goes at once


def _timed(name: str, seconds: float, spans: dict[str, list[tuple[float, float]]]) -> Script:
    def script(n: int) -> BatchResult | None:
        began = time.monotonic()
        time.sleep(seconds)
        spans.setdefault(name, []).append((began, time.monotonic()))
        return _result(name)
    return script


def _overlaps(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


@pytest.mark.parametrize("extra_workers", ["when_late", "always"])
def test_a_second_worker_goes_only_to_a_flow_that_would_be_late(
        extra_workers: ExtraWorkers) -> None:
    """A slow flow holds the first worker for 1.5 s at a time: the flow with a 1 s target
    takes the second one; a flow with no target (as if 60 s) waits for the first
    (``always``: it takes the second at once). The first round is left out: before
    its first batch every flow's input counts as waiting since long ago, so all are late."""
    spans: dict[str, list[tuple[float, float]]] = {}
    slow = _slot(_Loop("slow", None, _timed("slow", 1.5, spans)), 0.1)
    tight = _slot(_Loop("tight", None, _timed("tight", 0.05, spans)), 0.1, target=1.0)
    loose = _slot(_Loop("loose", None, _timed("loose", 0.05, spans)), 0.1)  # no target
    _run([slow, tight, loose], until=lambda: len(spans.get("slow", ())) >= 3,
         seconds=15.0, extra_workers=extra_workers)
    after = spans["slow"][0][1]
    later = {name: [s for s in found if s[0] >= after] for name, found in spans.items()}
    assert len(later["slow"]) >= 2
    assert _overlaps(later["slow"], later["tight"])
    assert _overlaps(later["slow"], later["loose"]) == (extra_workers == "always")
