"""Decode Debezium change events by their schema (pure: no Spark, no Kafka).

Debezium 2.x with its default converter settings writes each change as JSON, with the
Kafka Connect schema of every field beside the payload (``schemas.enable=true``). A
field's *logical type* (``name``) says how to read its value:

* ``org.apache.kafka.connect.data.Decimal``: base64 big-endian unscaled bytes and
  ``parameters.scale`` → ``Decimal``; ``io.debezium.data.VariableScaleDecimal``:
  ``{"scale": s, "value": base64}`` → ``Decimal``;
* ``io.debezium.time.Date``: days since 1970-01-01 → ``date``;
* ``io.debezium.time.Time`` / ``MicroTime`` / ``NanoTime``: ms / µs / ns since midnight
  → ``HH:MM:SS.ffffff`` text (Spark has no time-of-day type);
* ``io.debezium.time.Timestamp`` / ``MicroTimestamp`` / ``NanoTimestamp``: ms / µs / ns
  since the epoch → ``datetime`` (UTC); ``ZonedTimestamp``: ISO-8601 text with an offset;
* ``io.debezium.data.Json``, ``io.debezium.data.Enum``: text.

Without a logical type the Connect type decides (``int8``…``int64``, ``float32/64``,
``boolean``, ``string``, ``bytes`` as base64). ``decimal.handling.mode=double`` and
``string`` arrive as plain numbers and text. Schema-less messages are read by the
declared column types instead.

A message that cannot be decoded — not JSON, not an envelope, an unknown ``op``, a
``c``/``u`` without ``after`` (a ``d`` without ``before``), a key that cannot be read as
its type — yields a reason: it goes to the flow's dead-letter table, never lost and never
fatal. A tombstone (null value after a delete) carries nothing and is skipped.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
OPS = frozenset({"c", "u", "d", "r"})

#: Connect type (no logical type) → Spark type
_CONNECT_TYPES = {"int8": "int", "int16": "int", "int32": "int", "int64": "bigint",
                  "float32": "float", "float64": "double", "boolean": "boolean",
                  "string": "string", "bytes": "binary"}
#: logical type → Spark type (Decimal: from its parameters)
_LOGICAL_TYPES = {
    "io.debezium.time.Date": "date",
    "io.debezium.time.Time": "string", "io.debezium.time.MicroTime": "string",
    "io.debezium.time.NanoTime": "string",
    "io.debezium.time.Timestamp": "timestamp", "io.debezium.time.MicroTimestamp": "timestamp",
    "io.debezium.time.NanoTimestamp": "timestamp", "io.debezium.time.ZonedTimestamp": "timestamp",
    "io.debezium.data.Json": "string", "io.debezium.data.Enum": "string",
    "io.debezium.data.VariableScaleDecimal": "decimal(38,10)",
}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_TIME_UNITS = {"io.debezium.time.Time": 1_000, "io.debezium.time.MicroTime": 1_000_000,
               "io.debezium.time.NanoTime": 1_000_000_000}
_STAMP_UNITS = {"io.debezium.time.Timestamp": 1_000, "io.debezium.time.MicroTimestamp": 1_000_000,
                "io.debezium.time.NanoTimestamp": 1_000_000_000}


class BadMessage(ValueError):
    """Why a message cannot become a change row (the dead-letter reason)."""


def spark_type_of(field: Mapping[str, Any]) -> str:
    """The Spark type of a Connect field schema (``{"type", "name", "parameters"}``)."""
    name = field.get("name")
    if name == _DECIMAL:
        params = field.get("parameters") or {}
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        return f"decimal({max(precision, scale, 1)},{scale})"
    if name in _LOGICAL_TYPES:
        return _LOGICAL_TYPES[str(name)]
    return _CONNECT_TYPES.get(str(field.get("type")), "string")


def columns_of(envelope_schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(column, spark type)`` of the table, from an envelope's ``schema`` (its
    ``after``/``before`` struct)."""
    for part in envelope_schema.get("fields", ()):
        if part.get("field") in ("after", "before") and part.get("fields"):
            return tuple((str(f["field"]), spark_type_of(f)) for f in part["fields"])
    raise BadMessage("the envelope schema has no 'after'/'before' struct")


def _unscaled(text: str) -> int:
    return int.from_bytes(base64.b64decode(text), "big", signed=True)


def _decimal(value: Any, field: Mapping[str, Any]) -> Decimal:
    if isinstance(value, str) and field.get("name") == _DECIMAL:
        scale = int((field.get("parameters") or {}).get("scale", 0))
        return Decimal(_unscaled(value)).scaleb(-scale)
    if isinstance(value, Mapping):  # VariableScaleDecimal
        return Decimal(_unscaled(str(value["value"]))).scaleb(-int(value["scale"]))
    return Decimal(str(value))  # decimal.handling.mode = double | string


def _time_of_day(value: Any, per_second: int) -> str:
    micros = int(value) * 1_000_000 // per_second
    return (dt.datetime.min + dt.timedelta(microseconds=micros)).time().isoformat()


def _stamp(value: Any, per_second: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=int(value) * 1_000_000 // per_second)


def by_schema(value: Any, field: Mapping[str, Any]) -> Any:
    """``value`` of a field decoded by its Connect schema (see the module table)."""
    if value is None:
        return None
    name = field.get("name")
    if name == _DECIMAL or name == "io.debezium.data.VariableScaleDecimal":
        return _decimal(value, field)
    if name == "io.debezium.time.Date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if name in _TIME_UNITS:
        return _time_of_day(value, _TIME_UNITS[str(name)])
    if name in _STAMP_UNITS:
        return _stamp(value, _STAMP_UNITS[str(name)])
    if name == "io.debezium.time.ZonedTimestamp":
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(dt.UTC)
    return by_type(value, spark_type_of(field))


def by_type(value: Any, spark_type: str) -> Any:
    """``value`` of a schema-less message read as the declared ``spark_type``."""
    if value is None:
        return None
    if spark_type in ("int", "bigint"):
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"{value!r} is not an integer")
        return int(value)
    if spark_type in ("float", "double"):
        return float(value)
    if spark_type == "boolean":
        if isinstance(value, bool):
            return value
        raise ValueError(f"{value!r} is not a boolean")
    if spark_type.startswith("decimal("):
        return Decimal(str(value))
    if spark_type == "binary":
        return base64.b64decode(str(value))
    if spark_type in ("timestamp", "timestamp_ntz"):
        if isinstance(value, int | float):  # epoch ms (io.debezium.time.Timestamp)
            return _stamp(value, 1_000)
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(dt.UTC)
    if spark_type == "date":
        if isinstance(value, int):
            return dt.date(1970, 1, 1) + dt.timedelta(days=value)
        return dt.date.fromisoformat(str(value))
    return value if isinstance(value, str) else orjson.dumps(value).decode()


@dataclass(frozen=True)
class Change:
    """One decoded change: the image's values in column order, ``op`` and ``ts_ms``."""

    values: tuple[Any, ...]
    op: str
    ts_ms: int | None


def _envelope(raw: bytes) -> tuple[Mapping[str, Any], Mapping[str, Any] | None]:
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadMessage(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise BadMessage("not a Debezium envelope: a JSON object was expected")
    if "payload" in message and isinstance(message.get("schema"), dict):
        payload = message["payload"]
        if not isinstance(payload, dict):
            raise BadMessage("not a Debezium envelope: 'payload' is not an object")
        return payload, message["schema"]
    return message, None


def _image_fields(schema: Mapping[str, Any] | None, part: str) -> dict[str, Mapping[str, Any]]:
    for item in (schema or {}).get("fields", ()):
        if item.get("field") == part:
            return {str(f["field"]): f for f in item.get("fields", ())}
    return {}


def decode(raw: bytes | None, columns: Sequence[tuple[str, str]],
           key: Sequence[str]) -> Change | None:
    """The change in one Kafka message value (``None``: a tombstone), or
    :class:`BadMessage` with the reason."""
    if raw is None:
        return None
    payload, schema = _envelope(raw)
    op = payload.get("op")
    if op not in OPS:
        raise BadMessage(f"not a Debezium change: op={op!r} (expected c, u, d or r)"
                         if "op" in payload else "not a Debezium envelope: no 'op' field")
    part = "before" if op == "d" else "after"
    image = payload.get(part)
    if not isinstance(image, dict):
        raise BadMessage(f"op {op!r} without '{part}' (the row image is missing)")
    fields = _image_fields(schema, part)
    values = []
    for name, spark_type in columns:
        value = image.get(name)
        try:
            values.append(by_schema(value, fields[name]) if name in fields
                          else by_type(value, spark_type))
        except (ValueError, TypeError, KeyError, InvalidOperation, OverflowError) as exc:
            raise BadMessage(f"column {name!r}: cannot read {value!r} as {spark_type}: "
                             f"{exc}") from None
        if name in key and values[-1] is None:
            raise BadMessage(f"key column {name!r} is missing or null")
    ts = payload.get("ts_ms")
    return Change(tuple(values), str(op), int(ts) if isinstance(ts, int) else None)
