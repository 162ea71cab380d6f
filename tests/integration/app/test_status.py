"""``icetide status`` on tables written by a real Kafka flow: freshness, dead letters, lag."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession
from rich.console import Console

from icetide.app.lag import LAG_PATIENCE_S, LagProbes, pipeline_sources
from icetide.app.status import collect_status, pipeline_scope
from icetide.cli.live import LiveStatus
from icetide.cli.status_cmd import status
from icetide.config import Settings
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.engine.run import PipelineRun
from icetide.pipelines import load_pipeline
from icetide.runtime.catalogs import pyiceberg_catalog

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

FLOWS = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp
from icetide.sources import kafka

SCHEMA = ("cookieId string, expendTime int, webpageId int, uid string, productId string, "
          "updateTime bigint")

@dp.expect("long_visit", "expendTime < 0")
@dp.table(name="st_ods.clicks", partition_cols=["days(eventTime)"], freshness="1 hour",
          freshness_warn="30 minutes")
def clicks():
    rows = kafka.read("clicks", schema=SCHEMA, required=["uid", "productId", "updateTime"],
                      dead_letter="st_ods.clicks_dlq")
    return rows.withColumn("eventTime", F.timestamp_millis("updateTime"))
'''


def _pipeline(tmp_path: Path, broker: str, topic: str, database: str = "st_ods") -> Path:
    folder = tmp_path / "status_pipe"
    folder.mkdir(parents=True)
    (folder / "icetide-pipeline.yml").write_text(
        f"name: status_pipe\ncatalog: lake\ndatabase: {database}\n"
        f"sources:\n  clicks: {{type: kafka, topic: {topic}, bootstrap: '{broker}'}}\n")
    (folder / "flows.py").write_text(FLOWS.replace("st_ods.", f"{database}."))
    return folder


def test_status_reports_freshness_dead_letters_expectations_and_lag(
        spark: SparkSession, icetide_settings: Settings, broker: str,
        kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    topic = kafka_topic(partitions=2)
    first = produce_clicks(broker, topic, GenOptions(count=300, bad_ratio=0.1, seed=11,
                                                     partitions=2))
    folder = _pipeline(tmp_path, broker, topic)
    graph = load_pipeline(folder)
    run = PipelineRun(spark, icetide_settings, graph)
    try:
        run.run_once()
    finally:
        run.close()
    produce_clicks(broker, topic, GenOptions(count=40, seed=12, partitions=2))

    catalog = pyiceberg_catalog(icetide_settings)
    tables, targets = pipeline_scope(graph)
    sources = pipeline_sources(graph, icetide_settings)  # the pipeline names its bootstrap
    probes = LagProbes(icetide_settings, catalog, sources)
    try:
        rows = {r.table: r for r in collect_status(catalog, [*tables, "st_ods.clicks_dlq"],
                                                   targets=targets, lag=probes)}
    finally:
        for src in sources.values():
            src.close()
    clicks = rows["st_ods.clicks"]
    assert clicks.flows == ("st_ods.clicks",)
    assert clicks.rows_total == first.valid and clicks.rows_last_commit == first.valid
    assert clicks.dead_letters == clicks.dead_letters_total == first.malformed > 0
    assert clicks.target_s == 3600 and clicks.warn_s == 1800
    assert clicks.freshness_s is not None and clicks.freshness_s < 600
    assert clicks.state == "ok" and clicks.mode == "once"
    # where it ran (local mode: the driver runs the tasks; a cluster: tests/e2e/test_cluster)
    assert clicks.master == spark.sparkContext.master
    assert [e.split("@")[0] for e in clicks.executors] == ["driver"]
    assert clicks.expectations["long_visit"]["failed"] == first.valid  # expendTime >= 0
    [lag] = clicks.lag
    assert lag.source == f"kafka:{topic}" and lag.unit == "messages" and lag.behind == 40
    assert rows["st_ods.clicks_dlq"].rows_total == first.malformed

    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json",
                                                                 exclude_none=True)))
    result = CliRunner().invoke(status, ["--format", "json", "--config", str(config),
                                         str(folder)])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)
    assert row["table"] == "st_ods.clicks" and row["lag"][0]["behind"] == 40
    assert row["dead_letters"] == first.malformed and row["state"] == "ok"
    table = CliRunner().invoke(status, ["--no-lag", "--wide", "--config", str(config)])
    assert table.exit_code == 0, table.output
    assert "st_ods.clicks_dlq" in table.output and "once" in table.output

    # the demo's live view renders the same metadata, refreshed every second
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=True)
    with LiveStatus(icetide_settings, console, interval=0.2,
                    tables=["st_ods.clicks", "st_ods.clicks_dlq"]):
        time.sleep(0.5)
    shown = out.getvalue()
    assert "st_ods.clicks_dlq" in shown and f"{first.valid:,}" in shown
    assert "DLQ total" in shown and "ok" in shown  # the rows the dead-letter table holds
    assert "batch" in shown and row["batch_s"] > 0  # the newest batch's duration


LAYERED = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp

@dp.table(name="st_fresh.events", freshness="1 hour", partition_cols=["days(eventTime)"])
def events():
    return dp.read_stream("st_fresh.raw").withColumn("eventTime", F.col("at"))

dp.create_streaming_table("st_fresh.per_user", primary_key=["uid"], freshness="1 hour",
                          merge_engine=dp.aggregation(n="sum"))

@dp.append_flow(target="st_fresh.per_user")
def count_per_user():
    return dp.read_stream("st_fresh.events").groupBy("uid").agg(F.count(F.lit(1)).alias("n"))
'''


def test_freshness_is_measured_at_the_snapshot_commit_and_reaches_aggregates(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    """Achieved freshness = snapshot commit time − newest event (never the earlier time the
    batch was ready); a table without an event-time column (a MERGE aggregate) shows the
    age of the newest input it reflects; a stopped pipeline is judged by what it achieved."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.st_fresh")
    spark.sql("CREATE TABLE lake.st_fresh.raw (uid string, at timestamp) USING iceberg")
    spark.sql("INSERT INTO lake.st_fresh.raw VALUES ('a', current_timestamp()), "
              "('b', current_timestamp() - INTERVAL 2 SECONDS)")
    folder = tmp_path / "fresh"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text("name: fresh\ncatalog: lake\n")
    (folder / "flows.py").write_text(LAYERED)
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    catalog = pyiceberg_catalog(icetide_settings)
    events, per_user = collect_status(catalog, ["st_fresh.events", "st_fresh.per_user"],
                                      running=lambda table, flow: False)
    for row in (events, per_user):
        table = catalog.load_table(tuple(row.table.split(".")))
        snap = table.current_snapshot()
        assert snap is not None and row.newest_event_ms is not None
        assert row.achieved_s == pytest.approx((snap.timestamp_ms - row.newest_event_ms) / 1000)
        recorded = snap.summary.additional_properties.get("icetide.freshness.achieved-ms")
        if recorded is not None:  # measured before the commit: never above the real one
            assert int(recorded) / 1000 <= row.achieved_s + 1e-3
        assert row.activity == "stopped" and row.state == "ok"
    assert per_user.newest_event_ms == events.newest_event_ms  # the aggregate's input


def test_a_broker_that_is_down_holds_nothing_up_and_dead_letters_mean_one_thing(
        spark: SparkSession, icetide_settings: Settings, broker: str,
        kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    """Two batches with dead letters: ``DLQ total`` is what the dead-letter table holds
    (both), ``DLQ last commit`` the newest batch's. With the broker gone (a port nothing
    listens on) asking its lag returns within the probe's patience, and ``icetide status``
    answers with the lag unknown and the reason; piped, the default table is compact,
    ``--wide`` has the rest.

    Only the probe is timed: its bound is a thread join's deadline, which holds on a busy
    machine, where the command's start-up (imports, catalog reads) does not."""
    topic = kafka_topic(partitions=1)
    up = _pipeline(tmp_path, broker, topic, database="st_down")
    batches = []
    for seed in (21, 22):
        batches.append(produce_clicks(broker, topic, GenOptions(
            count=100, bad_ratio=0.2, seed=seed, partitions=1)))
        with PipelineRun(spark, icetide_settings, load_pipeline(up)) as run:
            run.run_once()
    down = _pipeline(tmp_path / "down", f"127.0.0.1:{free_port()}", topic, database="st_down")
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json",
                                                                 exclude_none=True)))

    sources = pipeline_sources(load_pipeline(down), icetide_settings)
    probes = LagProbes(icetide_settings, pyiceberg_catalog(icetide_settings), sources)
    try:
        started = time.monotonic()
        probes.prefetch([(f"kafka:{topic}", {"0": 100})])
        took = time.monotonic() - started
        probed = probes(f"kafka:{topic}", {"0": 100})
    finally:
        for src in sources.values():
            src.close()
    assert took < LAG_PATIENCE_S + 1, f"the lag probe took {took:.1f}s with the broker down"
    assert probed is not None and probed.behind is None and probed.error

    # the command as a user runs it, its process's exit included
    result = subprocess.run([sys.executable, "-m", "icetide.cli", "status", "--format", "json",
                             "--config", str(config), str(down)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)
    assert row["dead_letters_total"] == sum(b.malformed for b in batches)
    assert row["dead_letters"] == batches[1].malformed > 0
    [lag] = row["lag"]
    assert lag["behind"] is None and lag["error"]

    compact = CliRunner().invoke(status, ["--config", str(config), str(down)])
    wide = CliRunner().invoke(status, ["--wide", "--config", str(config), str(down)])
    assert compact.exit_code == 0 and wide.exit_code == 0, compact.output + wide.output
    assert f"kafka:{topic}: unknown (" in compact.output
    assert "DLQ total" in compact.output and "expectations" not in compact.output
    assert all(h in wide.output for h in ("DLQ last commit", "expectations", "files"))
    narrow = max(map(len, compact.output.splitlines()))
    assert narrow <= 170 and max(map(len, wide.output.splitlines())) > narrow + 50
