"""Stopped, idle and failing told apart: how a table's freshness is judged."""

from __future__ import annotations

from icetide.app.lag import SourceLag
from icetide.app.status import _judge, _pending
from icetide.engine.pacing import FreshnessTarget

TEN = FreshnessTarget(10.0, None)


def test_a_stopped_table_is_judged_by_the_freshness_it_had_when_it_committed() -> None:
    assert _judge(fresh=3600.0, achieved=4.0, target=TEN, activity="stopped",
                  pending=True) == "ok"
    assert _judge(fresh=3600.0, achieved=40.0, target=TEN, activity="stopped",
                  pending=None) == "fail"


def test_a_running_table_with_nothing_pending_is_fresh() -> None:
    assert _judge(fresh=3600.0, achieved=4.0, target=TEN, activity="running",
                  pending=False) == "ok"


def test_a_running_table_that_is_behind_is_judged_by_its_age_now() -> None:
    assert _judge(fresh=30.0, achieved=4.0, target=TEN, activity="running",
                  pending=True) == "fail"
    assert _judge(fresh=5.0, achieved=4.0, target=TEN, activity="unknown",
                  pending=None) == "ok"
    assert _judge(fresh=5.0, achieved=4.0, target=FreshnessTarget(None, None),
                  activity="running", pending=True) == "-"


def test_pending_is_real_lag() -> None:
    caught_up = [SourceLag("iceberg:lake.dwd.x", 0.0, "rows"), SourceLag("kafka:t", 0.0,
                                                                            "messages")]
    assert _pending(caught_up) is False
    assert _pending([*caught_up, SourceLag("mysql:shop:db.t", 2.5, "seconds")]) is True
    assert _pending([SourceLag("kafka:t", None, "", error="unreachable")]) is None
    assert _pending([]) is None
