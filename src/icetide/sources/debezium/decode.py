"""Decode Debezium change events by their schema (pure: no Spark, no Kafka).

Debezium 2.x and 3.x with their default converter settings write each change as JSON, with
the Kafka Connect schema of every field beside the payload (``schemas.enable=true``). A
field's *logical type* (Connect's ``Decimal``, Debezium's ``VariableScaleDecimal``,
``Date``, ``Time``/``MicroTime``/``NanoTime``, ``Timestamp``/``MicroTimestamp``/
``NanoTimestamp``, ``ZonedTimestamp``, ``Json``, ``Enum``; Connect's ``Date``/``Time``/
``Timestamp``) says how to read its value, else its Connect type does. Schema-less
messages are read by the declared column types instead (:mod:`.convert`); either way the
value then becomes the column's declared type where nothing is lost
(:func:`.convert.convert`).

A message that cannot be decoded (not JSON, not an envelope, an unknown ``op``, a
missing image, a key or value its type cannot hold) yields a reason naming the column:
it goes to the flow's dead-letter table, never lost and never fatal. A tombstone is
skipped. Each logical type and the dead-letter cases: docs/cdc.md ("Debezium topics").
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from icetide.sources.debezium.convert import convert, unscaled

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
OPS = frozenset({"c", "u", "d", "r"})
_TS_RANGE = (-62_135_596_800_000 + 86_400_000, 253_402_300_799_999 - 86_400_000)

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
    # time.precision.mode=connect
    "org.apache.kafka.connect.data.Date": "date", "org.apache.kafka.connect.data.Time": "string",
    "org.apache.kafka.connect.data.Timestamp": "timestamp",
}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_DATES = frozenset({"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"})
_TIME_UNITS = {"io.debezium.time.Time": 1_000, "io.debezium.time.MicroTime": 1_000_000,
               "io.debezium.time.NanoTime": 1_000_000_000,
               "org.apache.kafka.connect.data.Time": 1_000}
_STAMP_UNITS = {"io.debezium.time.Timestamp": 1_000, "io.debezium.time.MicroTimestamp": 1_000_000,
                "io.debezium.time.NanoTimestamp": 1_000_000_000,
                "org.apache.kafka.connect.data.Timestamp": 1_000}


class BadMessage(ValueError):
    """Why a message cannot become a change row (the dead-letter reason)."""


def spark_type_of(field: Mapping[str, Any]) -> str:
    """The Spark type of a Connect field schema (``{"type", "name", "parameters"}``)."""
    name = field.get("name")
    if name == _DECIMAL:
        params = _params(field)
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        return f"decimal({max(precision, scale, 1)},{scale})"
    if name in _LOGICAL_TYPES:
        return _LOGICAL_TYPES[str(name)]
    return _CONNECT_TYPES.get(str(field.get("type")), "string")


def _params(field: Mapping[str, Any]) -> Mapping[str, Any]:
    params = field.get("parameters")
    return params if isinstance(params, Mapping) else {}


def columns_of(envelope_schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(column, spark type)`` of the table, from an envelope's ``schema`` (its
    ``after``/``before`` struct)."""
    if not isinstance(envelope_schema, Mapping):
        raise BadMessage(f"the envelope schema is not an object: {envelope_schema!r:.80}")
    for part in _structs(envelope_schema.get("fields")):
        if part.get("field") in ("after", "before") and part.get("fields"):
            try:
                return tuple((str(f["field"]), spark_type_of(f))
                             for f in _structs(part["fields"]))
            except (KeyError, ValueError, TypeError) as exc:
                raise BadMessage(f"the envelope schema's {part['field']!r} struct is not a "
                                 f"Connect schema: {exc!r}") from None
    raise BadMessage("the envelope schema has no 'after'/'before' struct")


def _structs(fields: Any) -> list[Mapping[str, Any]]:
    """The field schemas of a Connect struct's ``fields`` (what is not one is skipped)."""
    return [f for f in fields if isinstance(f, Mapping)] if isinstance(fields, list) else []


def _decimal(value: Any, field: Mapping[str, Any]) -> Decimal:
    if isinstance(value, str) and field.get("name") == _DECIMAL:
        return Decimal(unscaled(value)).scaleb(-int(_params(field).get("scale", 0)))
    if isinstance(value, Mapping):  # VariableScaleDecimal
        return Decimal(unscaled(str(value["value"]))).scaleb(-int(value["scale"]))
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"a {type(value).__name__} is not a decimal")
    return Decimal(repr(value) if isinstance(value, float) else value)  # decimal.format=NUMERIC


def _time_of_day(value: Any, per_second: int) -> str:
    micros = int(value) * 1_000_000 // per_second
    return (dt.datetime.min + dt.timedelta(microseconds=micros)).time().isoformat()


def _stamp(value: Any, per_second: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=int(value) * 1_000_000 // per_second)


def by_schema(value: Any, field: Mapping[str, Any]) -> Any:
    """``value`` of a field decoded by its Connect schema (see the module table), as a
    Python value of the field's own Spark type (:func:`spark_type_of`)."""
    if value is None:
        return None
    name = field.get("name")
    if name in (_DECIMAL, "io.debezium.data.VariableScaleDecimal"):
        return _decimal(value, field)
    if name in _DATES:
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if name in _TIME_UNITS:
        return _time_of_day(value, _TIME_UNITS[str(name)])
    if name in _STAMP_UNITS:
        return _stamp(value, _STAMP_UNITS[str(name)])
    if name == "io.debezium.time.ZonedTimestamp":
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(dt.UTC)
    if field.get("type") == "bytes" and isinstance(value, str):
        return base64.b64decode(value, validate=True)
    return value  # JSON already holds ints, floats, booleans, text, structs and arrays


def carried(field: Mapping[str, Any] | None, value: Any) -> str:
    """What the message carries, for reasons: the Connect type (and logical type), or for a
    schema-less message the JSON type."""
    if field is None:
        kinds = {bool: "boolean", int: "number", float: "number", str: "string",
                 dict: "object", list: "array"}
        return f"JSON {kinds.get(type(value), type(value).__name__)}"
    name = field.get("name")
    if name == _DECIMAL:
        return f"{field.get('type')} ({name}, scale {_params(field).get('scale', 0)})"
    return f"{field.get('type')} ({name})" if name else str(field.get("type"))


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
    for item in _structs((schema or {}).get("fields")):
        if item.get("field") == part:
            return {str(f["field"]): f for f in _structs(item.get("fields")) if "field" in f}
    return {}


def _column(name: str, value: Any, field: Mapping[str, Any] | None, declared: str) -> Any:
    """One column's value as its declared type, decoded by its field schema if there is one;
    :class:`BadMessage` naming the column, what the message carries and the declared type."""
    try:
        decoded = value if field is None else by_schema(value, field)
        return convert(decoded, declared, schemaless=field is None)
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
        shown = repr(value) if len(repr(value)) <= 80 else f"{repr(value)[:77]}..."
        raise BadMessage(f"column {name!r}: cannot read {shown} ({carried(field, value)}) as "
                         f"{declared}: {exc}") from None


def decode(raw: bytes | None, columns: Sequence[tuple[str, str]],
           key: Sequence[str]) -> Change | None:
    """The change in one Kafka message value (``None``: a tombstone), or
    :class:`BadMessage` with the reason."""
    if raw is None:
        return None
    payload, schema = _envelope(raw)
    op = payload.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise BadMessage(f"not a Debezium change: op={op!r} (expected c, u, d or r)"
                         if "op" in payload else "not a Debezium envelope: no 'op' field")
    part = "before" if op == "d" else "after"
    image = payload.get(part)
    if not isinstance(image, dict):
        raise BadMessage(f"op {op!r} without '{part}' (the row image is missing)")
    fields = _image_fields(schema, part)
    values = []
    for name, declared in columns:
        values.append(_column(name, image.get(name), fields.get(name), declared))
        if name in key and values[-1] is None:
            raise BadMessage(f"key column {name!r} is missing or null")
    return Change(tuple(values), str(op), _ts_ms(payload.get("ts_ms")))


def _ts_ms(ts: Any) -> int | None:
    """The envelope's ``ts_ms`` (absent: ``None``), if it is an instant in years 1..9999."""
    if not isinstance(ts, int) or isinstance(ts, bool):
        return None
    if not _TS_RANGE[0] <= ts <= _TS_RANGE[1]:
        raise BadMessage(f"ts_ms={ts} is not an instant in milliseconds since the epoch")
    return ts
