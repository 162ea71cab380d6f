"""What only a real Apache Kafka broker shows (KRaft, started by the tests; Tansu has none
of it): transactions (aborted records and control records), offsets deleted by retention
and SASL/SCRAM with the secret from the
environment."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka_test_helpers import offsets, produce_exact
from pyspark.sql import SparkSession
from tests.brokers import APACHE, SCRAM

from icetide.config import KafkaConfig, load_settings
from icetide.devkit.embedded.kafka import SCRAM_MECHANISM, EmbeddedKafka
from icetide.errors import OffsetOutOfRangeError, SourceError
from icetide.model.source import BatchRange
from icetide.sources.kafka import KafkaSource
from icetide.sources.kafka.source import ReaderKind

pytestmark = [pytest.mark.kafka, APACHE]


def source(bootstrap: str, topic: str, policy: str = "fail", reader: str = "jvm"
           ) -> KafkaSource:
    cfg = KafkaConfig(bootstrap=bootstrap, offset_out_of_range=policy,  # type: ignore[arg-type]
                      reader=reader)  # type: ignore[arg-type]
    return KafkaSource(topic, cfg, request_timeout=5.0, slice_size=4)


def values(spark: SparkSession, src: KafkaSource, batch: BatchRange) -> list[str]:
    rows = src.read(spark, batch).select("value").collect()
    return sorted(bytes(r["value"]).decode() for r in rows)


def transaction(producer: Producer, topic: str, prefix: str, count: int, commit: bool) -> None:
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, f"{prefix}-{i}".encode(), partition=0)
    producer.flush(10)
    if commit:
        producer.commit_transaction(10)
    else:
        producer.abort_transaction(10)


@pytest.mark.spark
@pytest.mark.parametrize("reader", ["jvm", "python"])
def test_aborted_transactions_never_reach_a_batch_and_markers_keep_offsets_right(
        spark: SparkSession, broker: str, kafka_topic: Callable[..., str], reader: str) -> None:
    topic = kafka_topic(1)
    producer = Producer({"bootstrap.servers": broker, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(10)
    transaction(producer, topic, "kept", 10, commit=True)      # offsets 0-9, marker 10
    transaction(producer, topic, "aborted", 5, commit=False)   # 11-15, marker 16
    transaction(producer, topic, "late", 7, commit=True)       # 17-23, marker 24
    src = source(broker, topic, reader=reader)
    start = src.initial_position()
    assert src.lag(start)["total"] == 25  # offsets, markers included: the high watermark
    batch = src.plan(start)
    assert batch is not None and offsets(batch.end) == {"0": 25}
    got = values(spark, src, batch)
    assert got == sorted([f"kept-{i}" for i in range(10)] + [f"late-{i}" for i in range(7)])
    assert src.lag(batch.end)["total"] == 0 and src.plan(batch.end) is None
    transaction(producer, topic, "aborted-tail", 3, commit=False)  # the log ends in a marker
    tail = src.plan(batch.end)
    assert tail is not None and offsets(tail.end) == {"0": 29}
    assert values(spark, src, tail) == [] and src.plan(tail.end) is None


def retained_topic(bootstrap: str, deleted: int, kept: int) -> str:
    """A topic whose first ``deleted`` offsets retention removed (records stamped in 2023,
    ``retention.ms`` one hour), then ``kept`` records stamped now: ``m-<i>``."""
    from confluent_kafka.cimpl import NewTopic

    topic = f"ret_{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})]
                        )[topic].result(10)
    produce_exact(bootstrap, topic, {0: deleted}, prefix="old", batch=10)
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    deadline = time.monotonic() + 60
    while probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=5) != (
            deleted, deleted):  # the broker checks retention every second
        assert time.monotonic() < deadline, "retention deleted nothing within 60 s"
        time.sleep(0.5)
    probe.close()
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(deleted, deleted + kept):
        producer.produce(topic, f"m-{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    return topic


@pytest.mark.spark
def test_offsets_deleted_by_retention_follow_offset_out_of_range(
        spark: SparkSession, broker: str) -> None:
    topic = retained_topic(broker, 40, 60)
    assert offsets(source(broker, topic).initial_position()) == {"0": 40}
    with pytest.raises(OffsetOutOfRangeError, match=r"committed offset 10 is below the low "
                       r"watermark.*offsets \[40, 100\).*offset_out_of_range"):
        source(broker, topic).plan({"0": 10})
    earliest = source(broker, topic, "earliest").plan({"0": 10})
    assert earliest is not None and offsets(earliest.start) == {"0": 40}
    assert earliest.records == 60  # the 30 deleted offsets are skipped, and noted:
    assert earliest.info["notes"] == [
        "partition 0 reset 10 -> 40 (earliest, 30 offsets skipped)"]
    assert values(spark, source(broker, topic), earliest) == sorted(
        f"m-{i}" for i in range(40, 100))
    latest = source(broker, topic, "latest").plan({"0": 10})
    assert latest is not None and latest.records == 0 and offsets(latest.start) == {"0": 100}
    # re-reading a committed range that retention cut into: fail names the gap
    with pytest.raises(OffsetOutOfRangeError, match=r"cannot re-read offsets \[10, 60\), "
                       r"the broker has \[40, 100\)"):
        source(broker, topic).plan_to({"0": 10}, {"0": 60})
    again = source(broker, topic, "earliest").plan_to({"0": 10}, {"0": 60})
    assert offsets(again.start) == {"0": 40} and again.records == 20
    assert again.info["notes"] == [
        "partition 0 range start 10 -> 40 (deleted by retention, 30 offsets skipped)"]


def sasl_settings(tmp_path: Path, kafka: EmbeddedKafka, password: str
                  ) -> tuple[Path, dict[str, str]]:
    """A config file naming the SCRAM user, and the environment holding the password."""
    config = tmp_path / "icetide.yaml"
    config.write_text(
        f"kafka:\n  bootstrap: '{kafka.sasl_bootstrap}'\n  retry_timeout: 3\n"
        f"  properties:\n    security.protocol: SASL_PLAINTEXT\n"
        f"    sasl.mechanism: {SCRAM_MECHANISM}\n    sasl.username: {SCRAM.name}\n")
    return config, {"ICETIDE_KAFKA__PROPERTIES__SASL_PASSWORD": password,
                    "ICETIDE_HOME": str(tmp_path / "home")}


@pytest.mark.spark
@pytest.mark.parametrize("reader", ["python", "jvm"])
def test_sasl_scram_with_the_secret_from_the_environment(
        spark: SparkSession, apache_kafka: EmbeddedKafka, broker: str,
        kafka_topic: Callable[..., str], tmp_path: Path, reader: ReaderKind) -> None:
    topic = kafka_topic(2)
    produce_exact(broker, topic, {0: 30, 1: 12})
    config, env = sasl_settings(tmp_path, apache_kafka, SCRAM.password)
    settings = load_settings(config, env)
    assert settings.kafka.properties["sasl.password"] == SCRAM.password
    src = KafkaSource(topic, settings.kafka, request_timeout=5.0, retry_patience=5.0,
                      reader=reader)
    batch = src.plan(src.initial_position())
    assert batch is not None and batch.records == 42
    assert len(values(spark, src, batch)) == 42  # the reader tasks authenticate too
    # Spark's plan (its UI, explain) and the reader never show the secret (nor do Spark's
    # and the Kafka client's logs, even at DEBUG: checked by hand, 2026-11-27).
    plan = src.read(spark, batch)._jdf.queryExecution().toString()
    assert SCRAM.password not in plan and SCRAM.password not in repr(src.reader)
    config, env = sasl_settings(tmp_path, apache_kafka, "not-the-password")
    wrong = KafkaSource(topic, load_settings(config, env).kafka, request_timeout=5.0,
                        retry_patience=3.0)
    with pytest.raises(SourceError, match=apache_kafka.sasl_bootstrap):
        wrong.plan(wrong.initial_position())
