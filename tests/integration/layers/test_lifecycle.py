"""A table's lifecycle while its pipeline runs: suspend, resume, set-freshness (real
broker, Spark, Iceberg; the example pipeline)."""

from __future__ import annotations

from datetime import datetime

import pytest

from icetide.engine.pacing import FreshnessPacer, FreshnessTarget
from icetide.engine.run import PipelineRun
from icetide.errors import PipelineError, TableError
from icetide.flows.loop import FlowLoop
from icetide.lake.table_state import TableState, set_freshness, set_suspended, table_state
from tests.integration.layers.layers_helpers import BASE_MS, Lake, click_events, produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def count(lake: Lake, table: str) -> int:
    return int(next(iter(lake.rows(f"SELECT count(*) FROM {{c}}.{table}")))[0])


def test_suspend_resume_and_set_freshness(lake: Lake) -> None:
    lake.dims.seed(datetime(2026, 1, 1))
    produce(lake.bootstrap, lake.topic, click_events(0, 60, BASE_MS))
    lake.run()
    dwd = f"{lake.cat}.dwd.click_wide"
    assert set_suspended(lake.spark, dwd, True) == TableState(suspended=True)

    produce(lake.bootstrap, lake.topic, click_events(60, 30, BASE_MS))
    done = lake.run()
    assert count(lake, "ods_behavior.clickevent") == 90
    assert count(lake, "dwd.click_wide") == 60 and "dwd.click_wide" not in done  # suspended

    assert set_suspended(lake.spark, dwd, False) == TableState()
    lake.run()
    assert count(lake, "dwd.click_wide") == 90  # caught up from where it stopped

    assert set_freshness(lake.spark, dwd, "30 seconds").freshness_s == 30.0
    run = PipelineRun(lake.spark, lake.settings, lake.pipeline, only=["click_wide"])
    [flow] = run.compile_all()
    loop = FlowLoop(lake.spark, flow)
    pacer = FreshnessPacer(loop, FreshnessTarget(10.0), 2.0)
    pacer.retarget(loop.lifecycle.state().freshness_s)
    assert pacer.target.target_s == 30.0  # the scheduler paces by it from the next batch
    assert set_freshness(lake.spark, dwd, None) == table_state(lake.spark, dwd) == TableState()
    with pytest.raises(PipelineError, match="freshness"):
        set_freshness(lake.spark, dwd, "soon")
    with pytest.raises(TableError, match="does not exist"):
        set_suspended(lake.spark, f"{lake.cat}.dwd.nothing", True)
