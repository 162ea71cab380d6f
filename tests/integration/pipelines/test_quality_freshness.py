"""Expectations (warn/drop/fail) and freshness markers on a real pipeline run."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.quality import ExpectationChecker
from icetide.engine.run import PipelineRun
from icetide.errors import ExpectationFailed, PipelineError
from icetide.flows.loop import BatchResult
from icetide.lake import commit
from icetide.model.keys import MarkerKeys
from icetide.pipelines import load_pipeline
from icetide.pipelines.spec import Expectation

PREFIX = MarkerKeys.PREFIX

pytestmark = pytest.mark.spark

QUALITY = '''
from icetide import pipelines as dp

@dp.expect("small", "price < 100")
@dp.expect_or_drop("positive", "price > 0")
@dp.table(name="qf_dws.prices", partition_cols=["days(ts)"], freshness="1 hour",
          freshness_warn="30 minutes")
def prices():
    return dp.read_stream("qf_src.prices")
'''

FAILING = '''
from icetide import pipelines as dp

@dp.expect_or_fail("not_negative", "price >= 0")
@dp.table(name="qf_dws.strict")
def strict():
    return dp.read_stream("qf_src.strict_prices")
'''


def _pipeline(tmp_path: Path, name: str, code: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(
        f"name: {name}\ncatalog: lake\ndatabase: qf_dws\n")
    (folder / "flows.py").write_text(code)
    return folder


def _source(spark: SparkSession, rows: list[tuple[int, float | None]],
            table: str = "prices") -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.qf_src")
    spark.sql(f"CREATE TABLE IF NOT EXISTS lake.qf_src.{table} "
              "(id int, price double, ts timestamp) USING iceberg")
    now = datetime.now()
    spark.createDataFrame([(i, p, now) for i, p in rows],
                          "id int, price double, ts timestamp").writeTo(
        f"lake.qf_src.{table}").append()


def _summary(spark: SparkSession, ident: str) -> dict[str, str]:
    _, summary = next(commit.iter_ancestor_summaries(spark, ident))
    return summary


def test_warn_keeps_drop_filters_and_counts_land_in_the_summary(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _source(spark, [(1, 10.0), (2, 500.0), (3, -1.0), (4, None)])
    graph = load_pipeline(_pipeline(tmp_path, "quality", QUALITY))
    done = PipelineRun(spark, icetide_settings, graph).run_once()

    ids = sorted(r.id for r in spark.table("lake.qf_dws.prices").collect())
    assert ids == [1, 2]  # 500 only warns; -1 and NULL violate `positive` and are dropped
    assert [r.rows for r in done["qf_dws.prices"]] == [2]
    summary = _summary(spark, "lake.qf_dws.prices")
    assert summary[PREFIX + "rows"] == "2" and summary[PREFIX + "rows-in"] == "4"
    assert summary[PREFIX + "expect.small.failed"] == "2"  # 500 and NULL (NULL violates)
    assert summary[PREFIX + "expect.small.passed"] == "2"
    assert summary[PREFIX + "expect.small.action"] == "warn"
    assert summary[PREFIX + "expect.positive.failed"] == "2"
    assert summary[PREFIX + "expect.positive.action"] == "drop"
    assert summary[PREFIX + "expect.dropped"] == "2"
    # freshness: --once mode, the declared target, and the achieved freshness
    assert summary[PREFIX + "freshness.mode"] == "once"
    assert summary[PREFIX + "freshness.target-ms"] == "3600000"
    assert summary[PREFIX + "freshness.warn-ms"] == "1800000"
    assert 0 <= int(summary[PREFIX + "freshness.achieved-ms"]) < 600_000


def test_expect_or_fail_commits_nothing_and_names_the_row(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _source(spark, [(7, 1.0), (3, -1.0), (8, 2.0)], table="strict_prices")
    graph = load_pipeline(_pipeline(tmp_path, "strict", FAILING))
    with pytest.raises(ExpectationFailed) as failed:
        PipelineRun(spark, icetide_settings, graph).run_once()
    message = str(failed.value)
    assert "'not_negative'" in message and "qf_dws.strict" in message
    assert "'id': 3" in message and "'price': -1.0" in message  # the sample row
    assert spark.table("lake.qf_dws.strict").count() == 0
    assert commit.last_marker(spark, "lake.qf_dws.strict", "qf_dws.strict") is None


def test_continuous_run_records_the_chosen_mode(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _source(spark, [(1, 5.0)], table="live_prices")
    code = QUALITY.replace("prices", "live_prices")
    graph = load_pipeline(_pipeline(tmp_path, "live", code))
    stop = threading.Event()
    seen: list[BatchResult] = []

    def on_batch(result: BatchResult) -> None:
        seen.append(result)
        stop.set()

    began = time.monotonic()
    PipelineRun(spark, icetide_settings, graph, trigger_interval=0.5).run_forever(stop, on_batch)
    assert seen and time.monotonic() - began < 120
    summary = _summary(spark, "lake.qf_dws.live_prices")
    assert summary[PREFIX + "freshness.mode"] == "continuous"  # no cost measured yet
    assert summary[PREFIX + "freshness.target-ms"] == "3600000"
    assert PREFIX + "freshness.achieved-ms" in summary


def test_a_condition_over_unknown_columns_names_the_expectation(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1,)], "id int")
    checker = ExpectationChecker("qf_dws.t", [Expectation("sane", "nope > 1", "warn")])
    with pytest.raises(PipelineError, match=r"expectation 'sane' condition 'nope > 1'"):
        checker(df, None)
    checked = ExpectationChecker("qf_dws.t", [Expectation("pos", "id > 0", "drop")])(df, None)
    assert checked.rows == 1 and checked.extra["expect.pos.passed"] == "1"
