"""``KafkaSource``: a replayable Kafka topic for the generic flow loop.

Positions are ``{"<partition>": next_offset}``; a batch is ``[start, end)`` per
partition, planned on the driver (:mod:`.planner`) and read by Spark tasks: Spark's
Kafka source (:mod:`.jvm_reader`, ``kafka.reader=jvm``) or confluent-kafka in Python
tasks (:mod:`.python_reader`, ``kafka.reader=python``). Nothing is committed to Kafka:
the flow stores ``end`` in the target table's snapshot summary, in the same commit as the
rows.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from icetide.config import KafkaConfig
from icetide.errors import SourceError
from icetide.model.positions import KafkaPosition
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey
from icetide.sources.kafka.client import RetryPolicy, consumer_config, resolve_bootstrap
from icetide.sources.kafka.layout import DEFAULT_SLICE_SIZE, BatchReader
from icetide.sources.kafka.planner import (
    CLUSTER_KEY,
    Policy,
    compute_lag,
    encode_position,
    normalize_position,
    plan_exact,
    plan_offsets,
    position_cluster,
)
from icetide.sources.kafka.watermarks import WatermarkClient

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

ReaderKind = Literal["jvm", "python"]
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def check_topic(topic: str) -> str:
    """Return ``topic`` if Kafka accepts the name, else raise naming the rule."""
    if not _TOPIC_RE.match(topic) or topic in (".", ".."):
        raise SourceError(
            f"invalid Kafka topic name {topic!r}: use 1-249 characters from "
            "[A-Za-z0-9._-], e.g. 'clicktopic'"
        )
    return topic


class KafkaSource(Source[KafkaPosition]):
    """One Kafka topic; key ``kafka:<topic>``.

    ``retry_patience`` bounds how long planning waits for an unreachable broker
    (``None``: for ever, logging every retry); backoff doubles up to
    ``kafka.retry_backoff_max`` seconds. ``slice_size`` is the most offsets one Spark
    task reads; ``reader`` overrides ``kafka.reader``.
    """

    def __init__(
        self, topic: str, kafka: KafkaConfig | None = None, *, bootstrap: str | None = None,
        policy: Policy | None = None, slice_size: int = DEFAULT_SLICE_SIZE,
        retry_patience: float | None = None, request_timeout: float = 10.0,
        reader: ReaderKind | None = None,
    ) -> None:
        kafka = kafka or KafkaConfig()
        self.topic = check_topic(topic)
        self.key = str(SourceKey.kafka(topic))
        self.bootstrap = resolve_bootstrap(kafka, bootstrap)
        self.policy: Policy = policy or kafka.offset_out_of_range
        self.max_records = kafka.max_records_per_trigger
        self.slice_size = slice_size
        self.properties = dict(kafka.properties)
        retry = RetryPolicy(max_backoff=kafka.retry_backoff_max, patience=retry_patience)
        self.lag_retry = RetryPolicy(max_backoff=1.0, patience=min(retry_patience or 10.0, 10.0))
        self.client = WatermarkClient(topic, self.bootstrap, self.properties, retry,
                                      request_timeout)
        self.config = kafka
        self.reader = batch_reader(reader or kafka.reader, self.bootstrap, kafka, slice_size)

    def use_reader(self, kind: ReaderKind) -> None:
        """Read the following batches with ``kind`` (e.g. to compare both in one run)."""
        self.reader = batch_reader(kind, self.bootstrap, self.config, self.slice_size)

    def _encode(self, offsets: Mapping[int, int]) -> KafkaPosition:
        """A position: offsets per partition plus the cluster they belong to."""
        position: KafkaPosition = dict(encode_position(offsets))
        if self.client.cluster_id:
            position[CLUSTER_KEY] = self.client.cluster_id
        return position

    def _begin(self, start: KafkaPosition) -> tuple[dict[int, int], bool]:
        """Offsets to start from, and whether they were reset (another cluster's position)."""
        committed = position_cluster(start)
        current = self.client.cluster_id
        if committed is not None and current is not None and committed != current:
            log.warning(
                "%s: the committed offsets belong to Kafka cluster %s but %s is cluster %s "
                "(a restarted in-memory broker or another cluster): reading the topic from "
                "its beginning", self.key, committed, self.bootstrap, current)
            return {}, True
        return normalize_position(self.topic, start), False

    def initial_position(self) -> KafkaPosition:
        """Every partition at its low watermark (the earliest retained offset)."""
        marks = self.client.watermarks()
        return self._encode({p: low for p, (low, _) in marks.items()})

    def plan(self, start: KafkaPosition, max_records: int | None = None
            ) -> BatchRange[KafkaPosition] | None:
        """At most ``max_records`` (default ``kafka.max_records_per_trigger``) new offsets.

        ``None`` when nothing is new. When the out-of-range policy moved a partition
        (``earliest``/``latest``), a batch is returned even with 0 records so the flow can
        persist the new position; its ``start`` is then the corrected one.
        """
        marks = self.client.watermarks()
        begin, reset = self._begin(start)
        cap = self.max_records if max_records is None else max_records
        planned = plan_offsets(self.topic, begin, marks, cap, self.policy)
        moved = reset or any(planned.start.get(p) != off for p, off in begin.items())
        if planned.records == 0 and not moved:
            return None
        log.debug("%s: planned %d records %s", self.key, planned.records, planned.end)
        return BatchRange(self._encode(planned.start), self._encode(planned.end),
                          planned.records, planned.info(self.topic))

    def plan_to(self, start: KafkaPosition, end: KafkaPosition) -> BatchRange[KafkaPosition]:
        """Exactly ``[start, end)``; no broker round trip when the range is empty."""
        begin = normalize_position(self.topic, start)
        stop = normalize_position(self.topic, end)
        if all(p in begin and begin[p] == off for p, off in stop.items()):
            return BatchRange(start, end, 0,
                              {"topic": self.topic, "partitions": {}, "notes": []})
        planned = plan_exact(self.topic, begin, stop, self.client.watermarks(), self.policy)
        return BatchRange(self._encode(planned.start), self._encode(planned.end),
                          planned.records, planned.info(self.topic))

    def read(self, spark: SparkSession, batch: BatchRange[KafkaPosition]) -> DataFrame:
        """The batch's messages: ``key, value, topic, partition, offset, timestamp``."""
        begin = normalize_position(self.topic, batch.start)
        stop = normalize_position(self.topic, batch.end)
        return self.reader.raw(spark, self.topic, begin, stop)

    def read_json(self, spark: SparkSession, batch: BatchRange[KafkaPosition], schema: StructType,
                  required: Sequence[str] = ()) -> DataFrame:
        """The batch decoded as :func:`~icetide.sources.kafka.decode.decode_json` does."""
        begin = normalize_position(self.topic, batch.start)
        stop = normalize_position(self.topic, batch.end)
        return self.reader.decoded(spark, self.topic, begin, stop, schema, required)

    def first_values(self, count: int, timeout: float = 10.0) -> list[bytes]:
        """Up to ``count`` message values from the start of each partition (driver-side,
        e.g. to learn a topic's schema); nothing is committed."""
        from confluent_kafka import Consumer, TopicPartition

        marks = self.client.watermarks()
        consumer = Consumer(consumer_config(self.bootstrap, self.properties))
        try:
            consumer.assign([TopicPartition(self.topic, p, low) for p, (low, high) in
                             marks.items() if high > low])
            values: list[bytes] = []
            deadline = time.monotonic() + timeout
            while len(values) < count and time.monotonic() < deadline and consumer.assignment():
                for msg in consumer.consume(min(500, count - len(values)), 0.5):
                    value = msg.value() if msg.error() is None else None
                    if value is not None:
                        values.append(value)
                if sum(high - low for low, high in marks.values()) <= len(values):
                    break
            return values
        finally:
            consumer.close()

    def lag(self, position: KafkaPosition) -> dict[str, Any]:
        """``{"topic", "partitions": {"0": behind, ...}, "total"}`` behind the high watermark."""
        marks = self.client.watermarks(self.lag_retry)
        return compute_lag(self.topic, normalize_position(self.topic, position), marks)

    def close(self) -> None:
        """Close the driver's Kafka client."""
        self.client.close()

    @property
    def worker_modules(self) -> tuple[str, ...]:
        return self.reader.worker_modules

    def __repr__(self) -> str:
        return f"KafkaSource({self.topic!r}, bootstrap={self.bootstrap!r})"


def batch_reader(kind: ReaderKind, bootstrap: str, kafka: KafkaConfig,
                 slice_size: int = DEFAULT_SLICE_SIZE) -> BatchReader:
    """The reader of ``kafka.reader`` (``jvm``: Spark's Kafka source; ``python``:
    confluent-kafka in ``mapInArrow`` tasks)."""
    if kind == "jvm":
        from icetide.sources.kafka.jvm_reader import JvmReader

        return JvmReader(bootstrap, dict(kafka.properties), slice_size)
    from icetide.sources.kafka.python_reader import PythonReader
    from icetide.sources.kafka.reader import SliceReader

    tasks = SliceReader(bootstrap, dict(kafka.properties), backoff_max=kafka.retry_backoff_max)
    return PythonReader(tasks, slice_size)
