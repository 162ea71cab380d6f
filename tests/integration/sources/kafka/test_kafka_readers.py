"""The two batch readers (``kafka.reader``: ``jvm``, Spark's Kafka source, and ``python``,
confluent-kafka tasks) on the same real broker (Tansu and Apache Kafka): the same target
rows and the same dead letters, reasons included, record for record."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string
from tests.brokers import BOTH

from icetide.config import KafkaConfig
from icetide.devkit.gen.clicks import CLICK_REQUIRED, CLICK_SCHEMA_DDL, GenOptions, produce_clicks
from icetide.sources.kafka import KafkaSource
from icetide.sources.kafka.decode import split_decoded

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

#: Records beyond the generator's kinds: a tombstone, JSON that is no object, trailing
#: text (valid to Spark), a string field given a number, non-ASCII text, an int overflow.
EXTRAS: list[bytes | None] = [
    None, b"[1, 2]", b'{"uid": "u1", "productId": 3, "updateTime": 5} junk',
    b'{"uid": 513248, "productId": 3, "updateTime": 5}',
    '{"uid": "\u00fcml\u00e4ut \u2603", "productId": 4, "updateTime": 6}'.encode(),
    b'{"uid": "u2", "productId": 99999999999, "updateTime": 7}', b"", b"{}",
]


def produce_extras(broker: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": broker})
    for i, value in enumerate(EXTRAS):
        producer.produce(topic, value, key=f"x{i}".encode(), partition=i % 3)
    assert producer.flush(10) == 0


def rows(frame: object) -> list[Row]:
    from pyspark.sql import DataFrame

    assert isinstance(frame, DataFrame)
    order = next(c for c in ("_partition", "partition") if c in frame.columns)
    offset = "_offset" if order == "_partition" else "offset"
    return frame.orderBy(order, offset).collect()


@BOTH
def test_jvm_and_python_readers_agree_record_for_record(
    spark: SparkSession, broker: str, kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic(3)
    report = produce_clicks(broker, topic, GenOptions(count=1500, bad_ratio=0.1, seed=5,
                                                      chunk=400))
    assert report.delivery_errors == 0
    produce_extras(broker, topic)
    schema = _parse_datatype_string(CLICK_SCHEMA_DDL)
    assert isinstance(schema, StructType)
    seen: dict[str, tuple[list[Row], list[Row]]] = {}
    for kind in ("jvm", "python"):
        src = KafkaSource(topic, KafkaConfig(bootstrap=broker, reader=kind),  # type: ignore[arg-type]
                          request_timeout=5.0, slice_size=300)
        batch = src.plan(src.initial_position())
        assert batch is not None and batch.records == report.total + len(EXTRAS)
        valid, invalid = split_decoded(src.read_json(spark, batch, schema, CLICK_REQUIRED))
        seen[kind] = (rows(valid), rows(invalid))
        src.close()
    (jvm_valid, jvm_invalid), (py_valid, py_invalid) = seen["jvm"], seen["python"]
    assert len(jvm_valid) + len(jvm_invalid) == report.total + len(EXTRAS)
    assert len(jvm_invalid) >= report.malformed + 4  # tombstone, array, overflow, empty
    assert jvm_valid == py_valid
    assert jvm_invalid == py_invalid


@pytest.mark.parametrize(("slice_size", "tasks"), [(10_000, 2), (300, 6)])
def test_jvm_reader_shares_and_splits_tasks(
    spark: SparkSession, broker: str, kafka_topic: Callable[..., str], slice_size: int,
    tasks: int,
) -> None:
    """3 partitions of 700 on 2 slots: short ranges share the slots' tasks; ranges over
    ``slice_size`` are split (7 tasks asked: Spark cuts each range in round(7 / 3) = 2)."""
    from kafka_test_helpers import produce_exact

    topic = kafka_topic(3)
    produce_exact(broker, topic, {0: 700, 1: 700, 2: 700})
    src = KafkaSource(topic, KafkaConfig(bootstrap=broker, reader="jvm"), request_timeout=5.0,
                      slice_size=slice_size)
    batch = src.plan(src.initial_position())
    assert batch is not None
    frame = src.read(spark, batch)
    assert spark.sparkContext.defaultParallelism == 2
    assert frame.rdd.getNumPartitions() == tasks
    assert sorted(r["offset"] for r in frame.where("partition = 1").collect()) == list(range(700))
    src.close()
