"""Skew figures of a stage's task metrics (pure)."""

from __future__ import annotations

import pytest

from tests.tasks import StageTasks, TaskMetricsError, TaskSample


def test_even_and_skewed_stages() -> None:
    even = StageTasks(1, (250, 250, 250, 250), (10, 10, 10, 10))
    hot = StageTasks(2, (0, 2000, 1000, 1000), (1, 90, 40, 40))
    assert even.max_share == 0.25 and even.skew == 1.0
    assert hot.max_share == 0.5 and hot.skew == 2.0
    assert StageTasks(3, (0, 0), (0, 0)).max_share == 0.0
    sample = TaskSample("g", [even, hot])
    assert sample.busiest_stage() is hot


def test_no_stage_names_the_group() -> None:
    with pytest.raises(TaskMetricsError, match="job group 'g1' ran no task"):
        TaskSample("g1").busiest_stage()
