"""A message's value as its column's declared Spark type (pure: no Spark, no Kafka).

The value comes either decoded by its field schema (:func:`.decode.by_schema`: a Python
value of the carried type) or, for schema-less messages, as the JSON value itself, read
by the declared type as Debezium writes it by default (a decimal as base64 unscaled bytes,
a ``{"scale", "value"}`` object, a number or its text; a date as days since the epoch or
ISO text; a timestamp as ms, µs or ns since the epoch told apart by size, or ISO-8601
text; binary as base64). It is converted only where nothing is lost — ``TINYINT(1)`` 0/1
to ``boolean``, an integer to a type that holds it, a decimal to one that holds it
exactly, any scalar to ``string``, a date to a ``timestamp`` at midnight UTC; anything else
raises :class:`Mismatch` with why, and the row goes to the dead-letter table. Every
accepted form, and the two readings only a schema tells apart: docs/cdc.md ("Debezium
topics").
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
import struct
from collections.abc import Mapping
from decimal import Decimal, localcontext

import orjson

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
FLOAT_MAX = struct.unpack("f", bytes.fromhex("ffff7f7f"))[0]  # the largest float32
INT_RANGES = {"int": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1)}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})+|(?:[A-Za-z0-9+/]{4})*"
                     r"(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)")


class Mismatch(ValueError):
    """Why a value cannot become its declared type without loss."""


def unscaled(text: str) -> int:
    """The integer in base64 big-endian two's-complement bytes (Connect's ``Decimal``)."""
    return int.from_bytes(base64.b64decode(text, validate=True), "big", signed=True)


def convert(value: object, declared: str, *, schemaless: bool) -> object:
    """``value`` as the ``declared`` Spark type, or :class:`Mismatch`."""
    if value is None:
        return None
    if isinstance(value, list | dict) and not declared.startswith("decimal("):
        if declared == "string":
            return orjson.dumps(value).decode()
        raise Mismatch(f"a {'list' if isinstance(value, list) else 'struct'} does not "
                       f"convert to {declared}")
    if declared in INT_RANGES:
        return _to_int(value, declared)
    if declared in ("float", "double"):
        return _to_float(value, declared)
    if declared == "boolean":
        return _to_bool(value)
    if declared.startswith("decimal("):
        return _to_decimal(value, declared, schemaless)
    if declared == "binary":
        return _to_binary(value)
    if declared == "date":
        return _to_date(value, schemaless)
    if declared in ("timestamp", "timestamp_ntz"):
        return _to_timestamp(value, declared, schemaless)
    return _to_string(value)


def _number(value: object, declared: str) -> Decimal:
    """A number (or a number's text) as an exact ``Decimal``."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise Mismatch(f"a {type(value).__name__} does not convert to {declared}")
    if isinstance(value, str) and not _NUMBER.fullmatch(value.strip()):
        raise Mismatch(f"{value!r} is not a number")
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value).strip())
    if not number.is_finite():
        raise Mismatch(f"{value} has no {declared} value")
    return number


def _to_int(value: object, declared: str) -> int:
    number = Decimal(int(value)) if isinstance(value, bool) else _number(value, declared)
    if number != number.to_integral_value():
        raise Mismatch(f"{value} is not a whole number")
    low, high = INT_RANGES[declared]
    if not low <= number <= high:
        raise Mismatch(f"{value} is outside {declared}'s range {low}..{high}")
    return int(number)


def _to_float(value: object, declared: str) -> float:
    if isinstance(value, str) and value.strip() in ("NaN", "Infinity", "-Infinity"):
        return float(value)
    if isinstance(value, float):
        result = value
    else:
        number = _number(value, declared)
        result = float(number)
        if Decimal(repr(result)) != number:
            raise Mismatch(f"{value} is not exact as a {declared}")
    if declared == "float":
        if math.isfinite(result) and abs(result) > FLOAT_MAX:
            raise Mismatch(f"{value} is outside float's range")
        single = struct.unpack("f", struct.pack("f", result))[0]
        if not isinstance(value, float) and single != result:
            raise Mismatch(f"{value} is not exact as a float")
    return result


def _to_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int | float | Decimal | str) and _NUMBER.fullmatch(str(value).strip()):
        number = Decimal(str(value).strip())
        if number in (0, 1):
            return number == 1
    raise Mismatch("only 0 and 1 (or true and false) convert to boolean")


def _precision_scale(declared: str) -> tuple[int, int]:
    precision, scale = declared[len("decimal("):-1].split(",")
    return int(precision), int(scale)


def _to_decimal(value: object, declared: str, schemaless: bool) -> Decimal:
    precision, scale = _precision_scale(declared)
    if isinstance(value, Mapping):  # io.debezium.data.VariableScaleDecimal, schema-less
        if set(value) != {"scale", "value"}:
            raise Mismatch("a struct other than {scale, value} does not convert to a decimal")
        number = Decimal(unscaled(str(value["value"]))).scaleb(-int(value["scale"]))
    elif isinstance(value, str) and schemaless and _is_unscaled(value, scale):
        number = Decimal(unscaled(value)).scaleb(-scale)
    else:
        number = _number(value, declared)
    return fit_decimal(number, precision, scale)


def _is_unscaled(text: str, scale: int) -> bool:
    """Schema-less decimal text: base64 of the unscaled value rather than the number."""
    if not _BASE64.fullmatch(text):
        return False
    return scale > 0 or not _NUMBER.fullmatch(text)


def fit_decimal(number: Decimal, precision: int, scale: int) -> Decimal:
    """``number`` at ``scale`` if it fits ``decimal(precision, scale)`` exactly."""
    if not number.is_finite():
        raise Mismatch(f"{number} has no decimal({precision},{scale}) value")
    if number and number.adjusted() >= precision - scale:
        raise Mismatch(f"{number} needs more than {precision - scale} digits before the point")
    with localcontext() as context:
        context.prec = max(precision, 38) * 2
        fitted = number.quantize(Decimal(1).scaleb(-scale))
    if fitted != number:
        raise Mismatch(f"{number} has more than {scale} digits after the point")
    return fitted


def _to_binary(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise Mismatch(f"{value!r} is not base64") from None
    raise Mismatch(f"a {type(value).__name__} does not convert to binary")


def _to_date(value: object, schemaless: bool) -> dt.date:
    if isinstance(value, dt.datetime):
        stamp = value.astimezone(UTC) if value.tzinfo else value
        if stamp.time() != dt.time():
            raise Mismatch(f"{value.isoformat()} is not midnight UTC")
        return stamp.date()
    if isinstance(value, dt.date):
        return value
    if schemaless and isinstance(value, int) and not isinstance(value, bool):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)  # io.debezium.time.Date
    if isinstance(value, str):
        return dt.date.fromisoformat(value)
    raise Mismatch(f"a {type(value).__name__} does not convert to date")


def _to_timestamp(value: object, declared: str, schemaless: bool) -> dt.datetime:
    if isinstance(value, dt.datetime):
        stamp = value
    elif isinstance(value, dt.date):
        stamp = dt.datetime.combine(value, dt.time(), UTC)
    elif schemaless and isinstance(value, int | float) and not isinstance(value, bool):
        stamp = EPOCH + dt.timedelta(microseconds=int(value * 1_000_000 // _per_second(value)))
    elif isinstance(value, str):
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        raise Mismatch(f"a {type(value).__name__} does not convert to {declared}")
    stamp = stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return stamp.replace(tzinfo=None) if declared == "timestamp_ntz" else stamp


def _per_second(epoch: float) -> int:
    """The unit of a schema-less epoch number, by its size: ms below 10^13 (up to the year
    2286), µs below 10^16, else ns — Debezium's Timestamp, MicroTimestamp, NanoTimestamp."""
    size = abs(epoch)
    return 1_000 if size < 10**13 else 1_000_000 if size < 10**16 else 1_000_000_000


def _to_string(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | float):
        return orjson.dumps(value).decode()  # true / false, shortest round-trip digits
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.date):  # dates and datetimes
        return value.isoformat()
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise Mismatch("the bytes are not UTF-8 text") from None
    raise Mismatch(f"a {type(value).__name__} does not convert to string")
