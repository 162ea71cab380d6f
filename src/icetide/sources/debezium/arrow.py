"""Debezium change rows as Arrow, decoded inside Spark tasks (``mapInArrow``; no JVM work).

Input: raw Kafka messages (``key, value, topic, partition, offset, timestamp``). Output:
the table's columns, ``_op``, ``_pos`` (``offset * 1000 + partition``: Debezium routes a
key's changes to one partition, so the offset orders them), ``_ts`` (the change's
``ts_ms``), and for messages that could not be decoded ``_error`` with the raw message
(columns null) — the source splits those off into the flow's dead-letter table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypedDict, cast

import pyarrow as pa

from icetide.sources.debezium.decode import BadMessage, decode

RAW_COLUMNS = ("value", "topic", "partition", "offset", "timestamp")
META_DDL = ("_op string, _pos decimal(38,0), _ts timestamp, _error string, value binary, "
            "topic string, partition int, offset bigint, timestamp timestamp")


def arrow_type(spark_type: str) -> pa.DataType:
    """The Arrow type Spark expects for ``spark_type``."""
    simple = {"int": pa.int32(), "bigint": pa.int64(), "float": pa.float32(),
              "double": pa.float64(), "boolean": pa.bool_(), "string": pa.string(),
              "binary": pa.binary(), "date": pa.date32(),
              "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us")}
    if spark_type in simple:
        return simple[spark_type]
    precision, scale = spark_type[len("decimal("):-1].split(",")
    return pa.decimal128(int(precision), int(scale))


def output_schema(columns: Sequence[tuple[str, str]]) -> pa.Schema:
    fields = [pa.field(n, arrow_type(t)) for n, t in columns]
    fields += [pa.field("_op", pa.string()), pa.field("_pos", pa.decimal128(38, 0)),
               pa.field("_ts", pa.timestamp("us", tz="UTC")), pa.field("_error", pa.string()),
               pa.field("value", pa.binary()), pa.field("topic", pa.string()),
               pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
               pa.field("timestamp", pa.timestamp("us", tz="UTC"))]
    return pa.schema(fields)


def to_batch(rows: list[dict[str, object]], schema: pa.Schema) -> pa.RecordBatch:
    """``rows`` as one Arrow batch. The decoder already made every value its column's type;
    should Arrow still refuse one, that row alone becomes a dead letter naming the column —
    no message may fail the flow."""
    try:
        return pa.RecordBatch.from_pylist(rows, schema=schema)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return pa.RecordBatch.from_pylist([_storable(r, schema) for r in rows], schema=schema)


def _storable(row: dict[str, object], schema: pa.Schema) -> dict[str, object]:
    for field in schema:
        value = row.get(field.name)
        try:
            pa.array([value], field.type)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            return {**{c: row[c] for c in RAW_COLUMNS},
                    "_error": f"column {field.name!r}: cannot store {value!r} as {field.type}: "
                              f"{exc}"}
    return row


class RawRecord(TypedDict):
    """One Kafka record of the raw columns, as Arrow hands it to Python."""

    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: dt.datetime | None


@dataclass(frozen=True)
class EnvelopeDecoder:
    """The picklable ``mapInArrow`` function of one Debezium source."""

    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        schema = output_schema(self.columns)
        for batch in batches:
            raws = cast(list[RawRecord], batch.select(list(RAW_COLUMNS)).to_pylist())
            rows = [self._row(r) for r in raws]
            kept = [r for r in rows if r is not None]
            yield to_batch(kept, schema)

    def _row(self, raw: RawRecord) -> dict[str, object] | None:
        out: dict[str, object] = {"value": raw["value"], "topic": raw["topic"],
                               "partition": raw["partition"], "offset": raw["offset"],
                               "timestamp": raw["timestamp"]}
        try:
            change = decode(raw["value"], self.columns, self.key)
        except BadMessage as exc:
            return {**out, "_error": str(exc)}
        if change is None:
            return None  # a tombstone: nothing to apply, nothing lost
        for (name, _), value in zip(self.columns, change.values, strict=True):
            out[name] = value
        ts = None if change.ts_ms is None else dt.datetime.fromtimestamp(
            change.ts_ms / 1000, tz=dt.UTC)
        return {**out, "_op": change.op, "_pos": Decimal(raw["offset"] * 1000 + raw["partition"]),
                "_ts": ts}
