"""KafkaSource against the real embedded broker (Tansu; the exactly-once test on Apache Kafka
too) and a real local Spark."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from kafka_test_helpers import offsets, produce_exact
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string
from tests.brokers import BOTH

from icetide.config import KafkaConfig
from icetide.devkit.gen.clicks import CLICK_REQUIRED, CLICK_SCHEMA_DDL, GenOptions, produce_clicks
from icetide.errors import OffsetOutOfRangeError, SourceError
from icetide.model.source import BatchRange
from icetide.sources.kafka import KafkaSource
from icetide.sources.kafka.decode import parse_json

pytestmark = pytest.mark.kafka

ERROR_OF_KIND = {
    "truncated_json": "malformed JSON",
    "wrong_type_expendTime": "field expendTime: expected int, got string 'abc'",
    "wrong_type_updateTime": "field updateTime: expected bigint, got string 'yesterday'",
    "missing_uid": "missing required field uid",
    "missing_productId": "missing required field productId",
    "missing_updateTime": "missing required field updateTime",
}


def source(broker: str, topic: str, **kwargs: object) -> KafkaSource:
    policy = kwargs.pop("policy", "fail")
    cfg = KafkaConfig(bootstrap=broker, offset_out_of_range=policy)  # type: ignore[arg-type]
    return KafkaSource(topic, cfg, request_timeout=5.0, **kwargs)  # type: ignore[arg-type]


def offsets_of(spark: SparkSession, src: KafkaSource, batch: BatchRange) -> list[tuple[int, int]]:
    rows = src.read(spark, batch).select("partition", "offset").collect()
    return [(r["partition"], r["offset"]) for r in rows]


def expected(batch: BatchRange) -> list[tuple[int, int]]:
    start = offsets(batch.start)
    return [(int(p), o) for p, end in offsets(batch.end).items()
            for o in range(int(start[p]), int(end))]


@BOTH
@pytest.mark.spark
def test_batches_cover_exact_offsets_and_decode(
    spark: SparkSession, broker: str, kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic(3)
    report = produce_clicks(broker, topic, GenOptions(count=3000, bad_ratio=0.05, seed=11,
                                                      chunk=700))
    assert report.delivery_errors == 0 and report.total == 3000
    src = source(broker, topic, slice_size=400)
    position = src.initial_position()
    assert offsets(position) == {"0": 0, "1": 0, "2": 0}
    assert src.lag(position)["total"] == 3000  # Tansu's ListOffsets tail is corrected
    seen: list[tuple[int, int]] = []
    batches = 0
    while (batch := src.plan(position, max_records=1100)) is not None:
        assert offsets(batch.start) == offsets(position) and 0 < batch.records <= 1100
        got = offsets_of(spark, src, batch)
        assert sorted(got) == expected(batch)  # exactly [start, end): no gap, no dupe
        seen += got
        position, batches = batch.end, batches + 1
    assert batches == 3 and len(seen) == len(set(seen)) == 3000
    assert src.lag(position)["total"] == 0

    whole = src.plan_to(src.initial_position(), position)
    raw = src.read(spark, whole).cache()
    schema = _parse_datatype_string(CLICK_SCHEMA_DDL)
    assert isinstance(schema, StructType)
    valid, invalid = parse_json(raw, schema, CLICK_REQUIRED)
    assert valid.count() == report.valid
    assert valid.columns == [*schema.fieldNames(), "_topic", "_partition", "_offset", "_kafka_ts"]
    errors = Counter(r["error"] for r in invalid.select("error").collect())
    want = Counter({ERROR_OF_KIND[k]: n for k, n in report.kinds.items() if k != "valid"})
    assert errors == want
    assert invalid.columns == ["value", "topic", "partition", "offset", "timestamp", "error"]
    raw.unpersist()
    src.close()


@pytest.mark.spark
def test_keys_values_timestamps(spark: SparkSession, broker: str,
                                kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(2)
    produce_exact(broker, topic, {0: 250, 1: 120}, batch=40)
    src = source(broker, topic, slice_size=100)
    batch = src.plan(src.initial_position())
    assert batch is not None and offsets(batch.end) == {"0": 250, "1": 120}
    rows = src.read(spark, batch).collect()
    assert len(rows) == 370
    for row in rows:
        i = row["offset"]
        assert row["topic"] == topic
        assert bytes(row["key"]) == f"k{i}".encode()
        assert bytes(row["value"]) == f"m-{row['partition']}-{i}".encode()
        # PySpark returns naive local datetimes: .timestamp() reads them back the same way
        assert round(row["timestamp"].timestamp() * 1000) == 1_700_000_000_000 + i
    src.close()


@pytest.mark.spark
def test_new_partition_is_picked_up(spark: SparkSession, broker: str,
                                    kafka_topic: Callable[..., str]) -> None:
    # Tansu 0.6.0 has no CreatePartitions (KIP-195); a committed position that lacks a
    # partition the topic has is exactly what the planner sees after partitions are added.
    topic = kafka_topic(3)
    produce_exact(broker, topic, {0: 30, 1: 20, 2: 10})
    src = source(broker, topic)
    batch = src.plan({"0": 30, "1": 5})
    assert batch is not None
    assert offsets(batch.start) == {"0": 30, "1": 5, "2": 0}
    assert offsets(batch.end) == {"0": 30, "1": 20, "2": 10}
    assert sorted(offsets_of(spark, src, batch)) == expected(batch)
    src.close()


def test_out_of_range_policies(broker: str, kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(1)
    produce_exact(broker, topic, {0: 10})
    with pytest.raises(OffsetOutOfRangeError) as err:
        source(broker, topic).plan({"0": 50})
    for part in (repr(topic), "partition 0", "offset 50", "[0, 10)", "kafka.offset_out_of_range"):
        assert part in str(err.value)
    earliest = source(broker, topic, policy="earliest").plan({"0": 50})
    assert earliest is not None and offsets(earliest.start) == {"0": 0}
    assert earliest.records == 10
    latest = source(broker, topic, policy="latest").plan({"0": 50})
    assert latest is not None and offsets(latest.end) == {"0": 10} and latest.records == 0
    with pytest.raises(OffsetOutOfRangeError, match=r"\[5, 60\)"):
        source(broker, topic).plan_to({"0": 5}, {"0": 60})


def test_caps_and_plan_to(broker: str, kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(3)
    produce_exact(broker, topic, {0: 500, 1: 3, 2: 100})
    src = source(broker, topic)
    batch = src.plan({}, max_records=60)
    assert batch is not None and batch.records == 60
    assert offsets(batch.end) == {"0": 29, "1": 3, "2": 28}
    again = src.plan_to(batch.start, batch.end)
    assert (again.start, again.end, again.records) == (batch.start, batch.end, 60)
    assert src.plan({"0": 500, "1": 3, "2": 100}) is None
    assert src.lag({"0": 100})["partitions"] == {"0": 400, "1": 3, "2": 100}
    src.close()


def test_missing_topic_and_empty_range_need_no_broker(broker: str) -> None:
    with pytest.raises(SourceError, match="'nope_topic' does not exist"):
        source(broker, "nope_topic").plan({})
    dead = KafkaSource("t", KafkaConfig(bootstrap="127.0.0.1:1"), retry_patience=0.1)
    assert dead.plan_to({"0": 4}, {"0": 4}).records == 0
    with pytest.raises(SourceError, match="invalid Kafka topic name"):
        KafkaSource("bad topic!")
