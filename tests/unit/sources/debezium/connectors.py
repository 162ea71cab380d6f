"""Change messages shaped as the Debezium MySQL and PostgreSQL connectors (2.x and 3.x) write
them with their default settings (``decimal.handling.mode=precise``,
``time.precision.mode=adaptive_time_microseconds`` / ``adaptive``, ``binary.handling.mode=
bytes``) through the JsonConverter, with ``schemas.enable`` true (the default) or false.

One table, ``products``, in each database::

    MySQL:      id INT PRIMARY KEY, name VARCHAR(64), price DECIMAL(10,4), weight DOUBLE,
                in_stock TINYINT(1), qty BIGINT, born DATE, created DATETIME(6),
                updated TIMESTAMP, attrs JSON
    PostgreSQL: id integer PRIMARY KEY, name varchar(64), price numeric(10,4), weight double
                precision, in_stock boolean, qty bigint, born date, created timestamp,
                updated timestamptz, attrs jsonb, ratio numeric

Field schemas and values follow the connectors' documented type mappings (MySQL ``TINYINT``
is ``int16``; ``DECIMAL``/``numeric(p,s)`` is Connect ``Decimal``: base64 of the unscaled
big-endian two's-complement bytes; unconstrained ``numeric`` is ``VariableScaleDecimal``;
``DATE`` is ``io.debezium.time.Date``; ``DATETIME(6)``/``timestamp`` is ``MicroTimestamp``;
``TIMESTAMP``/``timestamptz`` is ``ZonedTimestamp``; ``JSON``/``jsonb`` is ``Json``).
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import orjson

VERSIONS = {"2.x": "2.7.4.Final", "3.x": "3.0.8.Final"}
TS_MS = 1_700_000_000_999

#: the declared columns (for schema-less messages), the same for both databases
COLUMNS: dict[str, str] = {
    "id": "int", "name": "string", "price": "decimal(10,4)", "weight": "double",
    "in_stock": "boolean", "qty": "bigint", "born": "date", "created": "timestamp",
    "updated": "timestamp", "attrs": "string"}
PG_COLUMNS = {**COLUMNS, "ratio": "decimal(20,6)"}


def unscaled(value: Decimal, scale: int) -> str:
    """``value`` as Connect's Decimal writes it in JSON: base64 of the unscaled bytes
    (Java's ``BigInteger.toByteArray``: minimal two's complement, big-endian)."""
    number = int(value.scaleb(scale))
    size = (number + (number < 0)).bit_length() // 8 + 1
    return base64.b64encode(number.to_bytes(size, "big", signed=True)).decode()


def _decimal_field(name: str, precision: int, scale: int) -> dict[str, Any]:
    return {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1, "parameters": {"scale": str(scale),
                                         "connect.decimal.precision": str(precision)},
            "field": name}


def _fields(connector: str) -> list[dict[str, Any]]:
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "name"},
        _decimal_field("price", 10, 4),
        {"type": "float64", "optional": True, "field": "weight"},
        {"type": "int16" if connector == "mysql" else "boolean", "optional": True,
         "field": "in_stock"},
        {"type": "int64", "optional": True, "field": "qty"},
        {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1,
         "field": "born"},
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
         "version": 1, "field": "created"},
        {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp",
         "version": 1, "field": "updated"},
        {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1,
         "field": "attrs"}]
    if connector == "postgresql":
        fields.append({"type": "struct", "optional": True,
                       "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
                       "doc": "Variable scaled decimal", "field": "ratio", "fields": [
                           {"type": "int32", "optional": False, "field": "scale"},
                           {"type": "bytes", "optional": False, "field": "value"}]})
    return fields


def row(connector: str, id_: int, price: str, *, in_stock: Any = None,
        ratio: str = "0.5") -> dict[str, Any]:
    """One row image as the connector writes it (``in_stock`` defaults to 1 / true)."""
    image: dict[str, Any] = {
        "id": id_, "name": f"item {id_}", "price": unscaled(Decimal(price), 4),
        "weight": 1.25, "in_stock": (1 if connector == "mysql" else True)
        if in_stock is None else in_stock,
        "qty": 2**40 + id_, "born": 19724, "created": 1_704_164_645_123_456,
        "updated": "2024-01-02T03:04:05Z" if connector == "mysql"
        else "2024-01-02T03:04:05.000000Z",
        "attrs": '{"color":"red"}'}
    if connector == "postgresql":
        exponent = -Decimal(ratio).as_tuple().exponent
        image["ratio"] = {"scale": exponent, "value": unscaled(Decimal(ratio), int(exponent))}
    return image


def decoded(id_: int, price: str, *, in_stock: bool = True,
            ratio: str | None = None) -> dict[str, Any]:
    """The values :func:`row` should decode to, as the declared columns' Python values."""
    out: dict[str, Any] = {
        "id": id_, "name": f"item {id_}", "price": Decimal(price).quantize(Decimal("0.0001")),
        "weight": 1.25, "in_stock": in_stock, "qty": 2**40 + id_,
        "born": dt.date(2024, 1, 2),
        "created": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
        "updated": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "attrs": '{"color":"red"}'}
    if ratio is not None:
        out["ratio"] = Decimal(ratio).quantize(Decimal("0.000001"))
    return out


def _source(connector: str, version: str) -> dict[str, Any]:
    common: dict[str, Any] = {"version": VERSIONS[version], "connector": connector,
                              "name": "dbserver1", "ts_ms": TS_MS - 500, "snapshot": "false",
                              "ts_us": (TS_MS - 500) * 1000, "ts_ns": (TS_MS - 500) * 10**6}
    if connector == "mysql":
        return {**common, "db": "inventory", "sequence": None, "table": "products",
                "server_id": 223344, "gtid": None, "file": "mysql-bin.000003", "pos": 4321,
                "row": 0, "thread": 7, "query": None}
    return {**common, "db": "postgres", "sequence": '["24023128","24023184"]',
            "schema": "public", "table": "products", "txId": 555, "lsn": 24023184, "xmin": None}


def _schema(connector: str) -> dict[str, Any]:
    topic = "dbserver1.inventory.products" if connector == "mysql" \
        else "dbserver1.public.products"
    value = {"type": "struct", "optional": True, "name": f"{topic}.Value",
             "fields": _fields(connector)}
    source = {"type": "struct", "optional": False, "name": f"io.debezium.connector.{connector}"
              ".Source", "field": "source", "fields": [
                  {"type": "string", "optional": False, "field": "version"},
                  {"type": "string", "optional": False, "field": "connector"},
                  {"type": "int64", "optional": False, "field": "ts_ms"}]}
    block = {"type": "struct", "optional": True, "name": "event.block", "version": 1,
             "field": "transaction", "fields": [
                 {"type": "string", "optional": False, "field": "id"},
                 {"type": "int64", "optional": False, "field": "total_order"}]}
    return {"type": "struct", "optional": False, "name": f"{topic}.Envelope", "version": 2,
            "fields": [{**value, "field": "before"}, {**value, "field": "after"}, source,
                       {"type": "string", "optional": False, "field": "op"},
                       {"type": "int64", "optional": True, "field": "ts_ms"},
                       {"type": "int64", "optional": True, "field": "ts_us"},
                       {"type": "int64", "optional": True, "field": "ts_ns"}, block]}


def message(connector: str, version: str, op: str, *, after: dict[str, Any] | None = None,
            before: dict[str, Any] | None = None, schemas: bool = True) -> bytes:
    """One change message value as the connector's JsonConverter serializes it."""
    payload = {"before": before, "after": after, "source": _source(connector, version),
               "transaction": None, "op": op, "ts_ms": TS_MS, "ts_us": TS_MS * 1000,
               "ts_ns": TS_MS * 10**6}
    body = {"schema": _schema(connector), "payload": payload} if schemas else payload
    return orjson.dumps(body)
