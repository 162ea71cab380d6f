"""``DebeziumSource``: one table's Debezium JSON change topic, through the CDC apply path.

Reads offsets with :class:`~icetide.sources.kafka.KafkaSource` (positions are Kafka
offsets per partition; a batch is ``[start, end)``) and decodes each envelope into the
same row shape as :class:`~icetide.sources.mysql.MySqlSource`: the table's columns, then
``_op`` (``r``/``c``/``u``/``d``), ``_pos`` and ``_ts``. The apply side
(:mod:`icetide.cdc.apply`) does not know which source it has.

Envelopes may come with or without the schema part (``{"schema": ..., "payload":
{...}}`` or the payload alone). ``op = 'd'`` takes the ``before`` image; tombstones (null
values after a delete) carry nothing and are skipped. Values are read as JSON text and
cast to the declared column types, so numbers, ``decimal.handling.mode=string``
decimals, ISO timestamps (``ZonedTimestamp``) and epoch-millisecond timestamps
(``io.debezium.time.Timestamp``) all work; dates may be ISO text or epoch days.

``_pos`` orders a key's versions: Debezium routes every change of a key to the same
partition, so the offset orders them; ``_pos = offset * 1000 + partition``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icetide.cdc.schema import Column, TableSchema
from icetide.errors import SourceError
from icetide.model.positions import KafkaPosition
from icetide.model.source import BatchRange, Source

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
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
        self.key = f"debezium:{config.name}"
        db, _, table = config.table.partition(".")
        key = set(config.primary_key)
        self._schema = TableSchema(db, table, tuple(
            Column(n, t, t, n not in key) for n, t in config.columns), config.primary_key)

    @property
    def tables(self) -> list[str]:
        return [self.config.table]

    def schema(self, table: str) -> TableSchema:
        return self._schema

    def initial_position(self) -> KafkaPosition:
        return self.kafka.initial_position()

    def plan(self, start: KafkaPosition, max_records: int | None = None
            ) -> BatchRange[KafkaPosition] | None:
        return self.kafka.plan(start, max_records)

    def plan_to(self, start: KafkaPosition, end: KafkaPosition) -> BatchRange[KafkaPosition]:
        return self.kafka.plan_to(start, end)

    def batch_schemas(self, batch: BatchRange[KafkaPosition]) -> dict[str, TableSchema]:
        return {self.config.table: self._schema}

    def read(self, spark: SparkSession, batch: BatchRange[KafkaPosition]) -> DataFrame:
        return decode_envelopes(self.kafka.read(spark, batch), self.config.columns)

    def read_tables(self, spark: SparkSession, batch: BatchRange[KafkaPosition]
            ) -> dict[str, DataFrame]:
        rows = self.read(spark, batch)
        return {} if rows.isEmpty() else {self.config.table: rows}

    def lag(self, position: KafkaPosition) -> dict[str, Any]:
        return self.kafka.lag(position)

    def close(self) -> None:
        self.kafka.close()


def _image_type(columns: Sequence[tuple[str, str]]) -> str:
    fields = ", ".join(f"`{n.replace('`', '``')}`: string" for n, _ in columns)
    return f"struct<{fields}>"


def envelope_schema(columns: Sequence[tuple[str, str]]) -> str:
    """DDL of an envelope with or without the schema part (values as JSON text)."""
    image = _image_type(columns)
    body = f"before: {image}, after: {image}, op: string, ts_ms: bigint"
    return f"struct<payload: struct<{body}>, {body}>"


def _typed(text: SparkColumn, spark_type: str) -> SparkColumn:
    from pyspark.sql import functions as F

    digits = text.rlike(r"^-?[0-9]+$")
    if spark_type in ("timestamp", "timestamp_ntz"):
        millis = F.timestamp_millis(text.cast("bigint")).cast(spark_type)
        return F.when(digits, millis).otherwise(text.cast(spark_type))
    if spark_type == "date":
        days = F.date_add(F.lit("1970-01-01").cast("date"), text.cast("int"))
        return F.when(digits, days).otherwise(text.cast("date"))
    if spark_type == "binary":
        return F.unbase64(text)
    return text.cast(spark_type)


def decode_envelopes(raw: DataFrame, columns: Sequence[tuple[str, str]]) -> DataFrame:
    """Kafka rows (``RAW_SCHEMA_DDL``) → table rows with ``_op``, ``_pos``, ``_ts``."""
    from pyspark.sql import functions as F

    env = F.from_json(F.col("value").cast("string"), envelope_schema(columns))
    parsed = raw.where(F.col("value").isNotNull()).select(
        env.alias("e"), F.col("offset"), F.col("partition"))

    def field(name: str) -> SparkColumn:
        return F.coalesce(F.col(f"e.payload.{name}"), F.col(f"e.{name}"))

    op = field("op")
    image = F.when(op == "d", field("before")).otherwise(field("after"))
    cols = [_typed(image.getField(n), t).alias(n) for n, t in columns]
    pos = (F.col("offset").cast("decimal(38,0)") * 1000 + F.col("partition")).cast(
        "decimal(38,0)")
    return parsed.where(op.isin("c", "u", "d", "r")).select(
        *cols, op.alias("_op"), pos.alias("_pos"),
        F.timestamp_millis(field("ts_ms")).alias("_ts"))


def columns_from(name: str, value: Any) -> tuple[tuple[str, str], ...]:
    """``columns:`` of a debezium source entry: a mapping ``{column: type}`` in order."""
    if not isinstance(value, Mapping) or not value:
        raise SourceError(f"debezium source {name!r}: columns={value!r} must map each column "
                          "to its type in order, e.g. {productId: string, price: 'decimal(10,4)'}")
    return tuple((str(k), str(v).replace(" ", "").lower()) for k, v in value.items())
