"""The scheduler's warning about a flow kept past its freshness target: what held it (the
workers and who had them, its table, a running batch), once per wait, at most once a
minute per flow with the waits in between counted; nothing for a flow without a target."""

from __future__ import annotations

import logging
import math

import pytest

from icetide.engine.dag import link
from icetide.engine.overdue import REPEAT_S, OverdueWatch
from icetide.engine.scheduler import Slot
from tests.unit.engine.test_scheduler import _Loop, _slot

NOW = 1_000.0


def _never(n: int) -> None:
    return None


def _dag(dws_target: float | None = 10.0) -> tuple[Slot, Slot, Slot]:
    """ODS (polled) → DWD → DWS, the DWS table's target ``dws_target``."""
    ods = _slot(_Loop("ods", None, _never, target="lake.ods"), 1.0)
    dwd = _slot(_Loop("dwd", "lake.ods", _never, target="lake.dwd"), 1.0)
    dws = _slot(_Loop("dws", "lake.dwd", _never, target="lake.dws"), 1.0, target=dws_target)
    slots = [ods, dwd, dws]
    link(slots, {"dwd": frozenset({"lake.ods"}), "dws": frozenset({"lake.dwd"})},
         {s.name: frozenset({s.target}) for s in slots})
    for slot in slots:
        slot.dirty, slot.pending_since, slot.next_start, slot.next_poll = False, math.inf, 0, 0
    return ods, dwd, dws


def _running(slot: Slot, since: float) -> None:
    slot.running, slot.started = True, since


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "icetide.engine.overdue" and r.levelno == logging.WARNING]


def test_a_ready_flow_without_a_worker_names_who_holds_the_workers_once_per_wait(
        caplog: pytest.LogCaptureFixture) -> None:
    ods, dwd, dws = _dag()
    _running(ods, NOW - 14.0)
    _running(dwd, NOW - 3.0)
    dws.dirty, dws.pending_since = True, NOW - 12.5
    watch = OverdueWatch(since=0.0)
    with caplog.at_level(logging.WARNING):
        watch.check(NOW, [ods, dwd, dws])
        watch.check(NOW + 0.5, [ods, dwd, dws])  # the same wait: said once
    [ods_said, dws_said] = _warnings(caplog)
    assert ods_said.startswith("flow ods: its batch has run 14.0s, longer than the 10s")
    assert "running beside it: dwd 3.0s" in ods_said
    assert dws_said == ("flow dws: its oldest input has waited 12.5s, past the 10s freshness "
                        "target it serves: no free worker; running: ods 14.0s, dwd 3.0s")


def test_waits_within_a_minute_are_counted_and_said_with_the_next_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    ods, dwd, dws = _dag()
    _running(dwd, NOW - 1.0)
    watch = OverdueWatch(since=0.0)
    with caplog.at_level(logging.WARNING):
        for n, at in enumerate((NOW, NOW + 20, NOW + 40, NOW + REPEAT_S + 1)):
            dws.dirty, dws.pending_since = True, at - 11.0 - n  # a new wait each time
            watch.check(at, [ods, dwd, dws])
    first, later = [m for m in _warnings(caplog) if m.startswith("flow dws:")]
    assert "waited 11.0s" in first and "since the last warning" not in first
    assert "waited 14.0s" in later  # the fourth wait, a minute after the first
    assert later.endswith("(2 more such waits since the last warning)")


def test_a_flow_held_by_its_spacing_or_its_table_says_which(
        caplog: pytest.LogCaptureFixture) -> None:
    ods, dwd, dws = _dag()
    dws.dirty, dws.pending_since, dws.next_start, dws.spacing = True, NOW - 11.0, NOW + 2.0, 5.0
    rival = _slot(_Loop("rival", None, _never, target="lake.dwd"), 1.0, target=5.0)
    _running(rival, NOW - 1.0)
    dwd.dirty, dwd.pending_since = True, NOW - 9.0  # past DWS's 10 s less nothing: 9 < 10
    with caplog.at_level(logging.WARNING):
        OverdueWatch(since=0.0).check(NOW, [ods, dwd, dws, rival])
    [said] = _warnings(caplog)
    assert said.endswith("its next start is due in 2.0s (its spacing 5.0s, or a retry's wait)")
    dwd.pending_since = NOW - 10.5
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        OverdueWatch(since=0.0).check(NOW, [ods, dwd, dws, rival])
    assert any(m.endswith("its table lake.dwd is being written by rival")
               for m in _warnings(caplog))


def test_a_wait_counts_from_the_runs_start_at_the_earliest(
        caplog: pytest.LogCaptureFixture) -> None:
    ods, dwd, dws = _dag()
    ods.pending_since = 0.0  # before its first batch: since the clock's origin
    _running(dwd, NOW - 1.0)
    _running(dws, NOW - 1.0)
    watch = OverdueWatch()  # the run starts now
    with caplog.at_level(logging.WARNING):
        watch.check(NOW, [ods, dwd, dws])
        assert _warnings(caplog) == []
        watch.check(NOW + 10.5, [ods, dwd, dws])
    [said] = [m for m in _warnings(caplog) if m.startswith("flow ods:")]
    assert "its oldest input has waited 10.5s" in said


def test_a_flow_serving_no_target_is_never_overdue(caplog: pytest.LogCaptureFixture) -> None:
    ods, dwd, dws = _dag(dws_target=None)
    _running(ods, NOW - 600.0)
    dws.dirty, dws.pending_since = True, NOW - 600.0
    with caplog.at_level(logging.WARNING):
        OverdueWatch(since=0.0).check(NOW, [ods, dwd, dws])
    assert _warnings(caplog) == []
