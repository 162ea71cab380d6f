"""Broker outages: the planner and the task reader retry, back off, and never skip data.

Tansu keeps data in memory only, so "the broker comes back" means: a new Tansu on the same
port, re-created topic, the same messages produced again (same offsets). Apache Kafka keeps
its log: killed and restarted on the same data dir, it has the same records.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from kafka_test_helpers import Background, capture, offsets, produce_exact

from icetide.config import KafkaConfig
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.kafka import EmbeddedKafka
from icetide.errors import SourceError
from icetide.sources.kafka import KafkaSource
from icetide.sources.kafka.reader import SliceReader

pytestmark = pytest.mark.kafka

COUNTS = {0: 100, 1: 80, 2: 60}
PLANNER_LOG = "icetide.sources.kafka.client"
READER_LOG = "icetide.sources.kafka.reader"


def fill(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    from tests.conftest import create_topic

    create_topic(bootstrap, topic, len(counts))
    produce_exact(bootstrap, topic, counts)


def test_plan_gives_up_after_patience(tmp_path: Path) -> None:
    with EmbeddedBroker(None, tmp_path) as broker:
        fill(broker.bootstrap, "gone", COUNTS)
        src = KafkaSource("gone", KafkaConfig(bootstrap=broker.bootstrap, retry_backoff_max=0.4),
                          retry_patience=2.5, request_timeout=0.5)
        assert src.plan({}) is not None
    with capture([PLANNER_LOG]) as logs, pytest.raises(SourceError) as err:
        src.plan({"0": 10})
    retries = [m for m in logs.messages() if "retry" in m]
    assert len(retries) >= 2
    assert all(broker.bootstrap in m for m in retries)
    assert broker.bootstrap in str(err.value) and "icetide broker start" in str(err.value)
    src.close()


def test_plan_waits_for_the_broker_and_skips_nothing(tmp_path: Path) -> None:
    first = EmbeddedBroker(None, tmp_path / "a")
    first.start()
    fill(first.bootstrap, "clicks", COUNTS)
    src = KafkaSource("clicks", KafkaConfig(bootstrap=first.bootstrap, retry_backoff_max=3.0),
                      request_timeout=0.5)  # retry_patience=None: wait for ever
    position = {"0": 50, "1": 40, "2": 30}
    first.stop()
    with capture([PLANNER_LOG]) as logs:
        planning = Background(lambda: src.plan(position))
        planning.start()
        # Wait for a long backoff, so the new broker is filled before the next attempt.
        logs.wait_for(lambda ms: any(re.search(r"in 3\.0s", m) for m in ms), timeout=60)
        with EmbeddedBroker(first.port, tmp_path / "b") as second:
            fill(second.bootstrap, "clicks", COUNTS)
            batch = planning.outcome(timeout=60)
    assert offsets(batch.start) == position
    assert offsets(batch.end) == {"0": 100, "1": 80, "2": 60} and batch.records == 120
    assert len([m for m in logs.messages() if "retry" in m]) >= 3
    src.close()


def test_reader_resumes_after_stall_and_restart(tmp_path: Path) -> None:
    first = EmbeddedBroker(None, tmp_path / "a")
    first.start()
    fill(first.bootstrap, "r", {0: 1000})  # the planned range below needs 2000
    reader = SliceReader(first.bootstrap, poll_timeout=0.2, stall_timeout=0.5, backoff_max=0.5,
                         batch_rows=300)
    plan = pa.RecordBatch.from_pylist([{"topic": "r", "partition": 0, "start": 0, "end": 2000}])
    with capture([READER_LOG]) as logs:
        reading = Background(lambda: list(reader([plan])))
        reading.start()
        logs.wait_for(lambda ms: any("at offset 1000" in m for m in ms))
        first.stop()
        logs.wait_for(lambda ms: len([m for m in ms if "reconnecting" in m]) >= 3)
        with EmbeddedBroker(first.port, tmp_path / "b") as second:
            fill(second.bootstrap, "r", {0: 2000})
            batches = reading.outcome(timeout=60)
    table = pa.Table.from_batches(batches)
    assert table.column("offset").to_pylist() == list(range(2000))
    assert table.column("value").to_pylist() == [f"m-0-{i}".encode() for i in range(2000)]


def test_reader_resumes_after_apache_kafka_is_killed_and_restarted(tmp_path: Path) -> None:
    """Apache Kafka keeps its log on disk: after kill -9 and a restart on the same data dir
    (same ports, same cluster) the stalled reader goes on where it stopped."""
    kafka = EmbeddedKafka(None, tmp_path)
    kafka.start()
    try:
        fill(kafka.bootstrap, "k", {0: 1000})
        reader = SliceReader(kafka.bootstrap, poll_timeout=0.2, stall_timeout=0.5,
                             backoff_max=0.5, batch_rows=300)
        plan = pa.RecordBatch.from_pylist([{"topic": "k", "partition": 0, "start": 0,
                                            "end": 2000}])
        with capture([READER_LOG]) as logs:
            reading = Background(lambda: list(reader([plan])))
            reading.start()
            logs.wait_for(lambda ms: any("at offset 1000" in m for m in ms), timeout=60)
            kafka.kill()
            logs.wait_for(lambda ms: len([m for m in ms if "reconnecting" in m]) >= 3)
            kafka.start()
            produce_exact(kafka.bootstrap, "k", {0: 1000}, prefix="after")
            batches = reading.outcome(timeout=120)
    finally:
        kafka.stop()
    table = pa.Table.from_batches(batches)
    assert table.column("offset").to_pylist() == list(range(2000))
    assert table.column("value").to_pylist() == (
        [f"m-0-{i}".encode() for i in range(1000)] + [f"after-0-{i}".encode()
                                                      for i in range(1000)])
