"""MaintenanceSchedule's schedule of first passes (no JVM)."""

from __future__ import annotations

from icetide.engine.maintenance_schedule import staggered


def test_first_passes_are_spread_over_the_first_interval_not_all_due_at_once() -> None:
    tables = ["lake.a", "lake.b", "lake.c", "lake.d"]
    first = staggered(tables, 1000.0, lambda t: 300.0)
    assert [first[t] - 1000.0 for t in tables] == [75.0, 150.0, 225.0, 300.0]


def test_each_table_keeps_its_own_interval() -> None:
    first = staggered(["lake.fast", "lake.slow"], 0.0,
                      lambda t: 60.0 if t == "lake.fast" else 600.0)
    assert first == {"lake.fast": 30.0, "lake.slow": 600.0}
    assert staggered([], 0.0, lambda t: 60.0) == {}
