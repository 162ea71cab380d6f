"""Debezium envelopes decoded by their schema, shaped as Debezium 2.x documents them."""

from __future__ import annotations

import base64
import datetime as dt
import re
from decimal import Decimal
from typing import Any

import orjson
import pytest

from icetide.sources.debezium.decode import BadMessage, columns_of, decode

UTC = dt.UTC


def _b64(unscaled: int, size: int = 2) -> str:
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


# Each field: (field schema as the connector's JsonConverter writes it, JSON value, decoded)
FIELDS: list[tuple[dict[str, Any], Any, Any]] = [
    ({"type": "int32", "optional": False, "field": "id"}, 1004, 1004),
    ({"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
      "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"},
      "field": "price"}, _b64(1234), Decimal("12.34")),
    ({"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
      "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"},
      "field": "refund"}, _b64(-1234), Decimal("-12.34")),
    ({"type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal",
      "version": 1, "fields": [{"type": "int32", "optional": False, "field": "scale"},
                               {"type": "bytes", "optional": False, "field": "value"}],
      "field": "ratio"}, {"scale": 3, "value": _b64(1234)}, Decimal("1.234")),
    ({"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1,
      "field": "born"}, 19675, dt.date(2023, 11, 14)),
    ({"type": "int32", "optional": True, "name": "io.debezium.time.Time", "version": 1,
      "field": "opens"}, 45296789, "12:34:56.789000"),
    ({"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1,
      "field": "closes"}, 45296789012, "12:34:56.789012"),
    ({"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "version": 1,
      "field": "created"}, 1700000000123, dt.datetime(2023, 11, 14, 22, 13, 20, 123000, UTC)),
    ({"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
      "version": 1, "field": "updated"}, 1700000000123456,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123456, UTC)),
    ({"type": "int64", "optional": True, "name": "io.debezium.time.NanoTimestamp",
      "version": 1, "field": "seen"}, 1700000000123456789,
     dt.datetime(2023, 11, 14, 22, 13, 20, 123456, UTC)),
    ({"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp",
      "version": 1, "field": "stamped"}, "2023-11-14T23:13:20.5+01:00",
     dt.datetime(2023, 11, 14, 22, 13, 20, 500000, UTC)),
    ({"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1,
      "field": "attrs"}, '{"color": "red"}', '{"color": "red"}'),
    ({"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
      "parameters": {"allowed": "small,large"}, "field": "size"}, "large", "large"),
    ({"type": "boolean", "optional": True, "field": "active"}, True, True),
    ({"type": "float64", "optional": True, "field": "price_double"}, 12.34, 12.34),
    ({"type": "string", "optional": True, "field": "price_string"}, "12.34", "12.34"),
    ({"type": "int64", "optional": True, "field": "big"}, 2**40, 2**40),
    ({"type": "bytes", "optional": True, "field": "blob"},
     base64.b64encode(b"\x00\xff").decode(), b"\x00\xff"),
]


def _envelope(op: str, image: dict[str, Any] | None, before: dict[str, Any] | None = None,
              fields: list[dict[str, Any]] | None = None) -> bytes:
    row = {"type": "struct", "optional": True, "name": "dbserver1.inventory.items.Value",
           "fields": fields if fields is not None else [f for f, _, _ in FIELDS]}
    schema = {"type": "struct", "optional": False,
              "name": "dbserver1.inventory.items.Envelope", "fields": [
                  {**row, "field": "before"}, {**row, "field": "after"},
                  {"type": "struct", "optional": False, "field": "source", "fields": []},
                  {"type": "string", "optional": False, "field": "op"},
                  {"type": "int64", "optional": True, "field": "ts_ms"}]}
    payload = {"before": before, "after": image,
               "source": {"connector": "mysql", "db": "inventory", "table": "items"},
               "op": op, "ts_ms": 1700000000999}
    return orjson.dumps({"schema": schema, "payload": payload})


def test_every_logical_type_is_decoded_by_its_schema() -> None:
    image = {f["field"]: value for f, value, _ in FIELDS}
    raw = _envelope("c", image)
    columns = columns_of(orjson.loads(raw)["schema"])
    assert dict(columns)["price"] == "decimal(10,2)" and dict(columns)["updated"] == "timestamp"
    change = decode(raw, columns, ("id",))
    assert change is not None and change.op == "c" and change.ts_ms == 1700000000999
    assert dict(zip([c for c, _ in columns], change.values, strict=True)) == {
        f["field"]: decoded for f, _, decoded in FIELDS}


def test_a_delete_takes_the_before_image_and_a_tombstone_is_skipped() -> None:
    raw = _envelope("d", None, before={"id": 7, "price": _b64(5)},
                    fields=[FIELDS[0][0], FIELDS[1][0]])
    change = decode(raw, columns_of(orjson.loads(raw)["schema"]), ("id",))
    assert change is not None and change.values == (7, Decimal("0.05")) and change.op == "d"
    assert decode(None, [("id", "int")], ("id",)) is None


def test_schema_less_messages_are_read_by_the_declared_types() -> None:
    raw = orjson.dumps({"op": "u", "after": {"id": "12", "price": "3.50", "at": 1700000000000},
                        "ts_ms": 5})
    change = decode(raw, [("id", "int"), ("price", "decimal(10,2)"), ("at", "timestamp")],
                    ("id",))
    assert change is not None
    assert change.values == (12, Decimal("3.50"), dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC))


@pytest.mark.parametrize(("raw", "reason"), [
    (b"not json at all", "not JSON"),
    (b"[1, 2]", "a JSON object was expected"),
    (orjson.dumps({"hello": "world"}), "no 'op' field"),
    (orjson.dumps({"op": "x", "after": {"id": 1}}), "op='x'"),
    (orjson.dumps({"op": "c", "before": None}), "op 'c' without 'after'"),
    (orjson.dumps({"op": "u", "after": None}), "op 'u' without 'after'"),
    (orjson.dumps({"op": "d", "after": {"id": 1}}), "op 'd' without 'before'"),
    (orjson.dumps({"op": "c", "after": {"id": "twelve"}}), "column 'id': cannot read 'twelve'"),
    (orjson.dumps({"op": "c", "after": {"name": "x"}}), "key column 'id' is missing"),
    (orjson.dumps({"op": "c", "after": {"id": 1}, "ts_ms": 10**17}), f"ts_ms={10**17} is not"),
    (orjson.dumps({"op": "c", "after": {"id": [1]}}), "cannot read [1] (JSON array) as int"),
    (orjson.dumps({"schema": {"fields": "x"}, "payload": {"op": "c", "after": {"id": "a"}}}),
     "cannot read 'a' (JSON string) as int"),
])
def test_bad_messages_name_the_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(BadMessage, match=re.escape(reason)):
        decode(raw, [("id", "int"), ("name", "string")], ("id",))
