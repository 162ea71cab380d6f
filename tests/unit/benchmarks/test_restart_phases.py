"""benchmarks.restart: reading the pipeline's startup phases and the report (no pipeline)."""

from __future__ import annotations

import pytest
from benchmarks.restart.__main__ import _args, report
from benchmarks.restart.phases import (
    ODS_FLOW,
    Restart,
    batch_detail,
    batch_table,
    cpu_table,
    headline,
    parse,
    step_seconds,
    step_table,
)

LOG = f"""\
2026-11-27 10:00:00,100 INFO icetide.runtime.startup: startup phase cli at 100.500 (+0.50s)
running pipeline 'clickstream' ...
2026-11-27 10:00:01,100 INFO icetide.runtime.startup: startup phase spark_session at 104.000 (+4.00s)
2026-11-27 10:00:02,100 INFO icetide.runtime.startup: startup phase scheduler at 107.000 (+7.00s)
x INFO icetide.runtime.startup: startup phase compiled {ODS_FLOW} at 106.000 (+6.00s)
x INFO icetide.runtime.startup: startup phase first_commit {ODS_FLOW} at 109.000 (+9.00s) position=0.10 plan=0.20 transform=1.50 write=0.70
x INFO icetide.runtime.startup: startup phase first_commit dwd.click_wide at 111.000 (+11.00s) write=1.00
x INFO icetide.runtime.startup: startup phase cli at 200.000 (+0.50s)
"""  # noqa: E501


def test_each_phase_is_read_once_with_its_end() -> None:
    ends = parse(LOG)
    assert ends["cli"] == 100.5  # the first line per phase
    assert ends["spark_session"] == 104.0
    assert ends[f"first_commit {ODS_FLOW}"] == 109.0
    assert ends["first_commit dwd.click_wide"] == 111.0


def test_steps_add_up_to_the_first_ods_commit_and_overlaps_count_zero() -> None:
    steps = step_seconds(parse(LOG), spawned=100.0)
    assert steps["cli"] == pytest.approx(0.5)
    assert steps["spark_session"] == pytest.approx(3.5)
    assert steps[f"compiled {ODS_FLOW}"] == pytest.approx(2.0)
    # the scheduler (107) came before the ODS flow's compile line in the log, but the
    # steps keep the canonical order: scheduler after compile
    assert steps["scheduler"] == pytest.approx(1.0)
    assert steps[f"first_commit {ODS_FLOW}"] == pytest.approx(2.0)
    assert sum(steps.values()) == pytest.approx(9.0)
    overlapped = step_seconds({"cli": 101.0, "spark_session": 105.0, "sources": 103.0}, 100.0)
    assert overlapped == {"cli": 1.0, "spark_session": 4.0, "sources": 0.0}


def test_steps_after_the_ods_batch_started_overlapped_it() -> None:
    """A flow compiled while the ODS batch ran was not on the way to its commit."""
    ends = {"spark_session": 104.0, f"compiled {ODS_FLOW}": 105.0,
            f"first_batch {ODS_FLOW}": 105.5, "flows_compiled": 108.0,
            "maintenance_schedule": 108.5, f"first_commit {ODS_FLOW}": 109.0}
    steps = step_seconds(ends, spawned=100.0)
    assert steps["flows_compiled"] is None and steps["maintenance_schedule"] is None
    assert steps[f"first_batch {ODS_FLOW}"] == pytest.approx(0.5)
    assert steps[f"first_commit {ODS_FLOW}"] == pytest.approx(3.5)
    assert sum(v for v in steps.values() if v is not None) == pytest.approx(9.0)
    runs = {"after": [Restart("after", 100.0, ends, {"ODS": 109.0})]}
    assert "| the remaining flows compiled (analysis, DDL, CDC schemas) (`flows_compiled`) " \
        "| overlapped the batch |" in step_table(runs)


def test_the_first_batch_phases_come_with_its_commit_line() -> None:
    assert batch_detail(LOG) == {"position": 0.1, "plan": 0.2, "transform": 1.5, "write": 0.7}
    assert batch_detail("no such line") == {}


def _restart(tree: str, spawned: float, ods: float | None) -> Restart:
    first = {} if ods is None else {"ODS": spawned + ods, "DWD": spawned + ods + 2}
    return Restart(tree, spawned, parse(LOG.replace("100.500", f"{spawned + 0.5:.3f}")),
                   first, {"write": 0.5})


def test_the_report_and_headline_compare_the_trees() -> None:
    runs = {"before": [_restart("before", 100.0, 18.0), _restart("before", 100.0, 20.0)],
            "after": [_restart("after", 100.0, 7.0), _restart("after", 100.0, None)]}
    line = headline(runs)
    assert line.startswith("restart after kill -9 → first ODS commit")
    assert "before 19.00 s → after 7.00 s" in line
    assert "\n" not in line
    body = report(runs, "python -m benchmarks.restart")
    assert "| before | 2 | 19.00 s (18.0–20.0) | 21.00 s (20.0–22.0) | - s, 2 none |" in body
    assert "| after | 2 | 7.00 s, 1 none |" in body
    assert f"| first ODS batch, to its commit (`first_commit {ODS_FLOW}`) |" in body
    assert "| write | 0.50 | 0.50 |" in body
    assert "to first ODS fresh commit" in body  # the backlog caught up


def test_the_events_the_first_batch_read_are_a_count() -> None:
    restart = Restart("after", 100.0, {}, {}, {"write": 0.5, "rows_in": 24_000.0})
    table = batch_table({"after": [restart]})
    assert "| events it read (count) | 24,000 |" in table and "| write | 0.50 |" in table


def test_the_cpu_of_the_way_is_told_per_part_with_the_cores_it_kept_busy() -> None:
    def run(ods: float, jit: float) -> Restart:
        return Restart("after", 100.0, {}, {"ODS": 100.0 + ods}, {},
                       {"JIT compilers": jit, "Python driver": 1.0})

    table = cpu_table({"after": [run(10.0, 3.0), run(12.0, 5.0), run(11.0, 4.0)]})
    assert "| JIT compilers | 4.00 (80%) |" in table  # medians: 4 of 5 CPU-s
    assert "| Python driver | 1.00 (20%) |" in table
    assert "| **all** | **5.00** |" in table
    assert "| cores busy on the way | 0.45 |" in table  # 5 CPU-s over 11 s
    body = report({"after": [run(10.0, 3.0)]}, "python -m benchmarks.restart")
    assert "Where the CPU of the way to the first ODS commit went" in body


def test_options() -> None:
    a = _args(["--restarts", "3", "--no-doc"])
    assert (a.restarts, a.no_doc, a.compare, a.outage) == (3, True, None, 0.0)
    assert _args(["--outage", "60"]).outage == 60.0

