"""Settings a pipeline run reads (docs/options.md): the trigger interval from
``flows.trigger_interval``, the pipeline file's ``defaults.trigger_interval`` or the run's
own; ``flows.concurrency`` and ``flows.extra_workers``; a run's maintenance switched off by
``defaults.maintenance.enabled`` (as by ``maintenance.enabled``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.run import PipelineRun
from icetide.flows.loop import BatchResult
from icetide.maintainer import MaintenanceReport
from icetide.pipelines import load_pipeline
from tests.pipelines import pipeline_folder

pytestmark = pytest.mark.spark

FLOWS = '''
from icetide import pipelines as dp

@dp.table(name="ropt.copy")
def copy():
    return dp.read_stream("ropt.src")
'''


def _pipeline(tmp_path: Path, name: str, defaults: str = "") -> Path:
    return pipeline_folder(tmp_path, name, FLOWS, f"defaults:\n{defaults}" if defaults else "")


def _settings(settings: Settings, **flows: object) -> Settings:
    policy = settings.maintenance.model_copy(update={"interval": 1.0, "min_input_files": 2})
    return settings.model_copy(update={"flows": settings.flows.model_copy(update=flows),
                                       "maintenance": policy})


def test_trigger_interval_and_workers_come_from_the_settings_unless_overridden(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    settings = _settings(icetide_settings, trigger_interval=7.0, concurrency=3,
                         extra_workers="always")
    plain = load_pipeline(_pipeline(tmp_path, "plain"))
    run = PipelineRun(spark, settings, plain)
    assert (run.trigger_interval(), run.concurrency()) == (7.0, 3)
    assert (run.scheduler().concurrency, run.scheduler().extra_workers) == (3, "always")
    assert PipelineRun(spark, icetide_settings, plain).scheduler().extra_workers == "when_late"
    graph = load_pipeline(_pipeline(tmp_path, "paced", "  trigger_interval: 3s\n"))
    assert PipelineRun(spark, settings, graph).trigger_interval() == 3.0
    assert PipelineRun(spark, settings, graph, trigger_interval=0.5).trigger_interval() == 0.5
    unset = _settings(icetide_settings, concurrency=None)
    assert PipelineRun(spark, unset, plain).concurrency() >= 2  # one per core, at least 2


def test_a_run_whose_maintenance_is_switched_off_maintains_nothing(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ropt")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.ropt.src (id int) USING iceberg")
    spark.sql("INSERT INTO lake.ropt.src VALUES (1)")
    folder = _pipeline(tmp_path, "unmaintained", "  maintenance: {enabled: false}\n")
    stop, batches = threading.Event(), []
    reports: list[MaintenanceReport] = []
    window = threading.Timer(6, stop.set)  # six maintenance intervals after the first batch

    def on_batch(result: BatchResult) -> None:
        batches.append(result)
        if len(batches) == 1:
            window.start()
        spark.sql(f"INSERT INTO lake.ropt.src VALUES ({len(batches) + 1})")  # a small file

    guard = threading.Timer(120, stop.set)
    guard.start()
    try:
        with PipelineRun(spark, _settings(icetide_settings), load_pipeline(folder),
                         trigger_interval=0.5) as run:
            run.run_forever(stop, on_batch, on_maintained=reports.append)
    finally:
        guard.cancel()
        window.cancel()
    assert batches and reports == []  # enabled, a pass would come every second
