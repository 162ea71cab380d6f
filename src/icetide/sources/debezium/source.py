"""``DebeziumSource``: one table's Debezium JSON change topic, through the CDC apply path.

Reads offsets with :class:`~icetide.sources.kafka.KafkaSource` (positions are Kafka
offsets per partition; a batch is ``[start, end)``) and decodes each envelope into the
same row shape as :class:`~icetide.sources.mysql.MySqlSource`: the table's columns, then
``_op`` (``r``/``c``/``u``/``d``), ``_pos`` and ``_ts``. The apply side
(:mod:`icetide.cdc.apply`) does not know which source it has.

Envelopes may come with or without the schema part (``{"schema": ..., "payload":
{...}}`` or the payload alone). With the schema, every value is decoded by its logical
type (:mod:`.decode`: Connect decimals, Debezium dates, times and timestamps in ms/µs/ns,
zoned timestamps, JSON, enums), and the table's columns come from it when the source
declares none. Schema-less messages are read by the declared ``columns``. ``op = 'd'``
takes the ``before`` image; tombstones (null values after a delete) carry nothing and
are skipped. A message that cannot be decoded goes to the flow's dead-letter table with
its raw bytes, topic/partition/offset and the reason; the rest of the batch commits.

``_pos`` orders a key's versions: Debezium routes every change of a key to the same
partition, so the offset orders them; ``_pos = offset * 1000 + partition``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from icetide.cdc.schema import Column, TableSchema
from icetide.errors import SourceError
from icetide.lake.dlq import dead_letters
from icetide.model.markers import dumps
from icetide.model.positions import KafkaPosition
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey
from icetide.sources.debezium.arrow import META_DDL, EnvelopeDecoder
from icetide.sources.debezium.decode import BadMessage, columns_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icetide.sources.kafka import KafkaSource

_TYPES = frozenset({"int", "bigint", "string", "boolean", "float", "double", "date",
                    "timestamp", "timestamp_ntz", "binary"})


@dataclass(frozen=True)
class DebeziumConfig:
    """``table`` names the upstream table (``db.table``); ``columns`` its columns in order
    as ``(name, spark type)``; ``primary_key`` its key."""

    name: str
    table: str
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...]
    drop_policy: str = "keep"

    def __post_init__(self) -> None:
        names = [n for n, _ in self.columns]
        bad = [t for _, t in self.columns if t not in _TYPES and not t.startswith("decimal(")]
        if not self.columns and self.primary_key:
            return  # the columns come from the messages' schema
        if not names or bad or not self.primary_key or set(self.primary_key) - set(names):
            raise SourceError(
                f"debezium source {self.name!r}: columns {dict(self.columns)} / primary_key "
                f"{list(self.primary_key)} are not valid: list every column with a Spark type "
                f"({sorted(_TYPES)} or decimal(p,s)) and name key columns among them")


class DebeziumSource(Source[KafkaPosition]):
    """One Debezium topic (one upstream table); key ``debezium:<name>``."""

    def __init__(self, config: DebeziumConfig, kafka: KafkaSource) -> None:
        self.config = config
        self.kafka = kafka
        self.key = str(SourceKey(SourceKey.DEBEZIUM, config.name))
        self._columns: tuple[tuple[str, str], ...] = config.columns
        #: this batch's label, its decoded rows and raw messages (persisted until the next)
        self._decoded: tuple[str, DataFrame, DataFrame] | None = None

    @property
    def tables(self) -> list[str]:
        return [self.config.table]

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """The declared columns, else those of the topic's first message with a schema."""
        if not self._columns:
            self._columns = columns_from_topic(self.kafka, self.config)
        return self._columns

    def schema(self, table: str) -> TableSchema:
        db, _, name = self.config.table.partition(".")
        key = set(self.config.primary_key)
        return TableSchema(db, name, tuple(Column(n, t, t, n not in key) for n, t in self.columns),
                           self.config.primary_key)

    @property
    def worker_modules(self) -> tuple[str, ...]:
        return self.kafka.worker_modules

    def initial_position(self) -> KafkaPosition:
        return self.kafka.initial_position()

    def plan(self, start: KafkaPosition, max_records: int | None = None
            ) -> BatchRange[KafkaPosition] | None:
        return self.kafka.plan(start, max_records)

    def plan_to(self, start: KafkaPosition, end: KafkaPosition) -> BatchRange[KafkaPosition]:
        return self.kafka.plan_to(start, end)

    def batch_schemas(self, batch: BatchRange[KafkaPosition]) -> dict[str, TableSchema]:
        return {self.config.table: self.schema(self.config.table)}

    def _decode(self, spark: SparkSession, batch: BatchRange[KafkaPosition]) -> DataFrame:
        """Every message of ``batch`` decoded once (kept until the next batch)."""
        from pyspark import StorageLevel

        label = dumps({"start": batch.start, "end": batch.end})
        if self._decoded is None or self._decoded[0] != label:
            self._release()
            raw = self.kafka.read(spark, batch)
            if not self.config.columns:  # schema-driven: the batch may bring new columns
                raw = raw.persist(StorageLevel.MEMORY_AND_DISK)
                self._columns = evolved(self.columns, batch_schemas_of(raw))
            frame = decode_messages(raw, self.columns, self.config.primary_key)
            self._decoded = (label, frame.persist(StorageLevel.MEMORY_AND_DISK), raw)
        return self._decoded[1]

    def _release(self) -> None:
        if self._decoded is not None:
            self._decoded[1].unpersist()
            self._decoded[2].unpersist()
            self._decoded = None

    def read(self, spark: SparkSession, batch: BatchRange[KafkaPosition]) -> DataFrame:
        """The batch's changes: the columns, ``_op``, ``_pos`` and ``_ts``."""
        from pyspark.sql import functions as F

        rows = self._decode(spark, batch).where(F.col("_error").isNull())
        return rows.select(*[n for n, _ in self.columns], "_op", "_pos", "_ts")

    def dead_letters(self, spark: SparkSession, batch: BatchRange[KafkaPosition],
                     flow: str) -> DataFrame:
        """The batch's messages that could not be decoded, as dead-letter rows."""
        from pyspark.sql import functions as F

        bad = self._decode(spark, batch).where(F.col("_error").isNotNull())
        return dead_letters(bad.withColumnRenamed("_error", "error"), flow=flow,
                            source=self.key)

    def read_tables(self, spark: SparkSession, batch: BatchRange[KafkaPosition]
            ) -> dict[str, DataFrame]:
        rows = self.read(spark, batch)
        return {} if rows.isEmpty() else {self.config.table: rows}

    def lag(self, position: KafkaPosition) -> dict[str, object]:
        return self.kafka.lag(position)

    def close(self) -> None:
        self._release()
        self.kafka.close()


def batch_schemas_of(raw: DataFrame) -> list[Mapping[str, object]]:
    """The distinct envelope schemas of a batch's messages, in offset order."""
    from pyspark.sql import functions as F

    text = F.get_json_object(F.col("value").cast("string"), "$.schema")
    rows = (raw.select(text.alias("schema"), "offset").where(F.col("schema").isNotNull())
            .groupBy("schema").agg(F.min("offset").alias("first")).orderBy("first").collect())
    return [s for s in (_json_object(r["schema"]) for r in rows) if s is not None]


def _json_object(text: str) -> Mapping[str, object] | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def evolved(columns: Sequence[tuple[str, str]],
            schemas: Sequence[Mapping[str, object]]) -> tuple[tuple[str, str], ...]:
    """``columns`` with the columns later schemas add appended (and their newer types):
    the target then evolves through the CDC schema path (:mod:`icetide.cdc.schema_sync`)."""
    out = dict(columns)
    for schema in schemas:
        try:
            found = columns_of(schema)
        except BadMessage:
            continue
        out.update(found)
    return tuple(out.items())


def decode_messages(raw: DataFrame, columns: Sequence[tuple[str, str]],
                    key: Sequence[str]) -> DataFrame:
    """Kafka rows → decoded change rows + ``_error`` (see :mod:`.arrow`), in the tasks."""
    ddl = ", ".join(f"`{n.replace('`', '``')}` {t}" for n, t in columns)
    return raw.mapInArrow(EnvelopeDecoder(tuple(columns), tuple(key)),
                          f"{ddl}, {META_DDL}" if ddl else META_DDL)


def columns_from_topic(kafka: KafkaSource, config: DebeziumConfig,
                       scan: int = 1000) -> tuple[tuple[str, str], ...]:
    """The columns of the first of the topic's first ``scan`` messages that carries a
    schema (the Debezium JsonConverter default)."""
    for value in kafka.first_values(scan):
        try:
            envelope = orjson.loads(value)
            if isinstance(envelope, dict) and isinstance(envelope.get("schema"), dict):
                return columns_of(envelope["schema"])
        except (orjson.JSONDecodeError, BadMessage):
            continue
    raise SourceError(
        f"debezium source {config.name!r}: no message of topic {kafka.topic!r} carries a "
        "schema yet to learn the columns from: declare `columns:` (name: type, in order) for "
        "schema-less messages, or run again once the connector has written a change")


def columns_from(name: str, value: object) -> tuple[tuple[str, str], ...]:
    """``columns:`` of a debezium source entry: a mapping ``{column: type}`` in order."""
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not value:
        raise SourceError(f"debezium source {name!r}: columns={value!r} must map each column "
                          "to its type in order, e.g. {productId: string, price: 'decimal(10,4)'}")
    return tuple((str(k), str(v).replace(" ", "").lower()) for k, v in value.items())
