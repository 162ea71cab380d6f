"""Reading planned Kafka offset ranges with Spark's own Kafka source (``kafka.reader=jvm``).

A batch ``[start, end)`` per partition becomes one ``spark.read.format("kafka")`` with
``assign`` (the partitions with something to read), ``startingOffsets`` and
``endingOffsets`` (JSON per partition, the end exclusive) — nothing is committed to Kafka
and no consumer group is joined. The values are decoded by ``from_json`` in the JVM
(:func:`~icetide.sources.kafka.decode.decode_json`), dead letters keep their raw bytes.

``failOnDataLoss=true``: the planner already applied ``kafka.offset_out_of_range``, so an
offset that vanishes between planning and reading fails the batch, which is planned again
(gaps the broker leaves on purpose — transaction markers, aborted records, compaction —
are skipped, not data loss). Tasks: :func:`~icetide.sources.kafka.layout.task_count`
(short ranges share a task, long ones are split). ``kafkaConsumer.pollTimeoutMs`` bounds
one poll: a silent broker fails the batch, which the flow loop retries. Both readers
compared: docs/architecture.md ("Kafka").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from icetide.sources.kafka.client import READER_GROUP
from icetide.sources.kafka.java_client import java_options
from icetide.sources.kafka.layout import (
    DEFAULT_SLICE_SIZE,
    RAW_SCHEMA_DDL,
    Ranges,
    ranges,
    task_count,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: One poll of the executors' consumers (Spark's default is spark.network.timeout, 120 s).
POLL_TIMEOUT_MS = 10_000
_RAW_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")


def source_options(topic: str, planned: Ranges, tasks: int) -> dict[str, str]:
    """``assign``/``startingOffsets``/``endingOffsets`` (and ``minPartitions`` when the
    ranges must be split into ``tasks``) for the non-empty ``planned`` ranges."""
    options = {
        "assign": json.dumps({topic: sorted(planned)}),
        "startingOffsets": json.dumps({topic: {str(p): r[0] for p, r in planned.items()}}),
        "endingOffsets": json.dumps({topic: {str(p): r[1] for p, r in planned.items()}}),
        "failOnDataLoss": "true",
        "kafkaConsumer.pollTimeoutMs": str(POLL_TIMEOUT_MS),
        # Spark's group ids are <prefix>-<uuid>: one prefix for ACLs and broker logs
        # (nothing is committed under them, no group is joined)
        "groupIdPrefix": READER_GROUP,
    }
    if tasks > len(planned):
        options["minPartitions"] = str(tasks)
    return options


@dataclass(frozen=True)
class JvmReader:
    """A :class:`~icetide.sources.kafka.layout.BatchReader` on Spark's Kafka source.

    ``properties`` are ``kafka.properties`` (librdkafka names), translated once by
    :func:`~icetide.sources.kafka.java_client.java_options`."""

    worker_modules: ClassVar[tuple[str, ...]] = ()  # its tasks run in the JVM

    bootstrap: str
    properties: Mapping[str, str] = field(default_factory=dict, repr=False)  # secrets
    slice_size: int = DEFAULT_SLICE_SIZE
    client: Mapping[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client", java_options(self.bootstrap, self.properties))

    def raw(self, spark: SparkSession, topic: str, start: Mapping[int, int],
            end: Mapping[int, int]) -> DataFrame:
        planned = ranges(start, end)
        if not planned:
            return spark.createDataFrame([], RAW_SCHEMA_DDL)
        slots = spark.sparkContext.defaultParallelism
        tasks = task_count([e - s for s, e in planned.values()], slots, self.slice_size)
        frame = (spark.read.format("kafka").options(**self.client)
                 .options(**source_options(topic, planned, tasks)).load()
                 .select(*_RAW_COLUMNS))
        return frame.coalesce(tasks) if tasks < len(planned) else frame

    def decoded(self, spark: SparkSession, topic: str, start: Mapping[int, int],
                end: Mapping[int, int], schema: StructType,
                required: Sequence[str]) -> DataFrame:
        from icetide.sources.kafka.decode import decode_json

        return decode_json(self.raw(spark, topic, start, end), schema, required)
