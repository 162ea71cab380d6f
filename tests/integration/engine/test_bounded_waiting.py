"""Unreachable sources: `--once` gives up after kafka.retry_timeout naming the address and
the setting; a continuous run stops within seconds on SIGTERM while it is retrying; a flow
whose code fails stops after flows.max_failures tries instead of retrying for ever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from icetide.app.status import collect_status
from icetide.config import FlowsConfig, Settings
from icetide.devkit.embedded.process import free_port
from icetide.engine.run import PipelineRun
from icetide.flows.context import BatchContext
from icetide.flows.failures import FlowFailed
from icetide.flows.loop import Flow, FlowLoop
from icetide.pipelines import load_pipeline
from icetide.runtime.catalogs import pyiceberg_catalog
from icetide.sources.kafka import KafkaSource
from icetide.tables.ddl import APPEND_TABLE_PROPERTIES, create_table_sql

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

FLOW = '''
from icetide import pipelines as dp
from icetide.sources import kafka

@dp.table(name="wait.clicks")
def clicks():
    return kafka.read("clicks", schema="uid string", dead_letter="wait.clicks_dlq")
'''


def _pipeline(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    folder = tmp_path / "pipeline"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(
        "name: wait\ncatalog: lake\nsources:\n  clicks: {type: kafka, topic: clicks}\n")
    (folder / "flows.py").write_text(FLOW)
    dead = f"127.0.0.1:{free_port()}"  # nothing listens here
    env = {**os.environ, "ICETIDE_HOME": str(tmp_path / "home"), "ICETIDE_KAFKA__BOOTSTRAP": dead,
           "ICETIDE_SPARK__MASTER": "local[1]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
           "ICETIDE_KAFKA__RETRY_TIMEOUT": "3"}
    return folder, env, dead


def test_once_gives_up_naming_the_address_and_the_setting(tmp_path: Path) -> None:
    folder, env, dead = _pipeline(tmp_path)
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "icetide.cli", "run", str(folder), "--once"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"Kafka at {dead} unreachable" in done.stderr
    assert "ICETIDE_KAFKA__RETRY_TIMEOUT" in done.stderr
    assert time.monotonic() - began < 240  # JVM start + 3 s of retries, not for ever


def test_a_continuous_run_stops_promptly_while_retrying(tmp_path: Path) -> None:
    folder, env, _ = _pipeline(tmp_path)
    env["ICETIDE_KAFKA__RETRY_TIMEOUT"] = "600"
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "icetide.cli", "-v", "run", str(folder)],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        # planning's first failed try (each takes the 10 s request timeout): it now retries
        # with backoff for up to the 600 s set above; a later retry proves nothing more
        while b"retrying with backoff for up to 600s" not in log.read_bytes():
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        assert time.monotonic() - stopped_at < 15, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_failing_flow_stops_after_max_failures(
        spark: SparkSession, broker: str, kafka_topic: object, tmp_path: Path) -> None:
    topic = kafka_topic()  # type: ignore[operator]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.failing")
    target = "lake.failing.out"
    spark.sql(create_table_sql(target, [("uid", "string")], properties=APPEND_TABLE_PROPERTIES))
    src = KafkaSource(topic, bootstrap=broker)
    calls: list[int] = []

    def transform(ctx: BatchContext) -> DataFrame:
        calls.append(1)
        raise ValueError("a bug in the flow's own code")

    from icetide.devkit.gen.clicks import GenOptions, produce_clicks

    produce_clicks(broker, topic, GenOptions(count=10, seed=3))
    loop = FlowLoop(spark, Flow(name="failing", target=target, sources={src.key: src},
                                transform=transform), max_failures=2)
    stop = threading.Event()
    with pytest.raises(FlowFailed, match=r"'failing' stopped after 2 failed batches.*"
                                         r"ValueError: a bug in the flow's own code"):
        loop.run_forever(0.1, stop)
    assert len(calls) == 2


def test_status_shows_the_error_a_flow_stopped_on(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.flowerr")
    spark.sql("CREATE TABLE lake.flowerr.src (uid string) USING iceberg")
    (tmp_path / "icetide-pipeline.yml").write_text("name: flowerr\ncatalog: lake\n")
    (tmp_path / "flows.py").write_text(
        "from icetide import pipelines as dp\n"
        "@dp.table(name='flowerr.out')\n"
        "def out():\n"
        "    return dp.read_stream('flowerr.src').selectExpr(\n"
        "        \"IF(uid = 'bad', raise_error('uid must not be bad'), uid) AS uid\")\n")
    settings = icetide_settings.model_copy(update={"flows": FlowsConfig(max_failures=2)})
    spark.sql("INSERT INTO lake.flowerr.src VALUES ('good'), ('bad')")
    with PipelineRun(spark, settings, load_pipeline(tmp_path), trigger_interval=0.2) as run, \
            pytest.raises(FlowFailed, match="uid must not be bad"):
        run.run_forever(threading.Event())
    [row] = collect_status(pyiceberg_catalog(settings), ["flowerr.out"])
    assert set(row.errors) == {"flowerr.out"}
    assert "uid must not be bad" in row.errors["flowerr.out"]
    assert "uid must not be bad" in json.dumps(row.to_json())
