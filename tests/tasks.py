"""Per-task work of Spark jobs, read from Spark's status store (no UI, no REST).

``measure_tasks`` runs a block under a private job group, then reads every task of
every stage those jobs ran from the driver's ``AppStatusStore`` (the data behind the
Spark UI, kept even with ``spark.ui.enabled=false``) through py4j. For each stage it
reports the records each task consumed (input records + shuffle records read) and its
run time — enough to see whether one task did most of a stage's work (skew).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icetide.errors import IcetideError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_MAX_TASKS = 100_000


class TaskMetricsError(IcetideError):
    """Task metrics could not be read back from Spark's status store."""


@dataclass(frozen=True)
class StageTasks:
    """The tasks of one stage: records consumed and run time (ms) per task."""

    stage_id: int
    records: tuple[int, ...]
    run_ms: tuple[int, ...]

    @property
    def total_records(self) -> int:
        return sum(self.records)

    @property
    def max_share(self) -> float:
        """The busiest task's share of the stage's records (1/tasks = perfectly even)."""
        total = self.total_records
        return max(self.records) / total if total else 0.0

    @property
    def skew(self) -> float:
        """Busiest task's records over the mean (1.0 = even)."""
        total = self.total_records
        return max(self.records) * len(self.records) / total if total else 0.0


@dataclass
class TaskSample:
    """What ``measure_tasks`` collected: one entry per stage that ran tasks."""

    group: str
    stages: list[StageTasks] = field(default_factory=list)

    def busiest_stage(self) -> StageTasks:
        """The stage that consumed the most records (the join or aggregation stage)."""
        if not self.stages:
            raise TaskMetricsError(
                f"job group {self.group!r} ran no task: run an action (count, write) "
                "inside the measure_tasks block"
            )
        return max(self.stages, key=lambda s: s.total_records)


def _task_record(task: Any) -> tuple[int, int]:
    metrics = task.taskMetrics()
    if metrics.isEmpty():
        return 0, 0
    m = metrics.get()
    records = int(m.inputMetrics().recordsRead()) + int(m.shuffleReadMetrics().recordsRead())
    return records, int(m.executorRunTime())


def _stage_tasks(spark: SparkSession, stage_id: int, wait: float) -> StageTasks | None:
    tracker = spark.sparkContext.statusTracker()
    info = tracker.getStageInfo(stage_id)
    if info is None or info.numTasks == 0 or info.numCompletedTasks == 0:
        return None  # skipped (its shuffle output was reused) or never ran
    jsc = spark.sparkContext._jsc
    assert jsc is not None
    store = jsc.sc().statusStore()
    deadline = time.monotonic() + wait
    while True:  # the listener bus is asynchronous: wait for every task end event
        tasks = store.taskList(stage_id, info.currentAttemptId, _MAX_TASKS)
        if tasks.size() >= info.numCompletedTasks or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    pairs = [_task_record(tasks.apply(i)) for i in range(tasks.size())]
    return StageTasks(stage_id, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


@contextmanager
def measure_tasks(spark: SparkSession, label: str = "measure",
                  wait: float = 5.0) -> Iterator[TaskSample]:
    """Collect per-task metrics of the jobs run inside the block (same thread)."""
    sc = spark.sparkContext
    sample = TaskSample(f"icetide-{label}-{uuid.uuid4().hex[:8]}")
    sc.setJobGroup(sample.group, label)
    try:
        yield sample
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]  # clears it
    tracker = sc.statusTracker()
    stage_ids = sorted({s for job in tracker.getJobIdsForGroup(sample.group)
                        if (info := tracker.getJobInfo(job)) is not None
                        for s in info.stageIds})
    for stage_id in stage_ids:
        stage = _stage_tasks(spark, stage_id, wait)
        if stage is not None:
            sample.stages.append(stage)
    log.debug("job group %s: %s", sample.group, sample.stages)
