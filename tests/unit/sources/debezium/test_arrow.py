"""The ``mapInArrow`` decoder: no message fails the batch, whatever its values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from tests.unit.sources.debezium.connectors import COLUMNS, message, row

from icetide.sources.debezium.arrow import EnvelopeDecoder, output_schema, to_batch

STAMP = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)


def _kafka(values: list[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"value": v, "topic": "t", "partition": 0, "offset": i, "timestamp": STAMP}
         for i, v in enumerate(values)],
        schema=pa.schema([("value", pa.binary()), ("topic", pa.string()),
                          ("partition", pa.int32()), ("offset", pa.int64()),
                          ("timestamp", pa.timestamp("us", tz="UTC"))]))


def _decoded(values: list[bytes]) -> list[dict[str, Any]]:
    decoder = EnvelopeDecoder(tuple(COLUMNS.items()), ("id",))
    return [r for b in decoder(iter([_kafka(values)])) for r in b.to_pylist()]


@pytest.mark.parametrize("schemas", [True, False], ids=["schema", "schemaless"])
def test_mysql_tinyint_and_precise_decimals_land_in_boolean_and_decimal_columns(
        schemas: bool) -> None:
    """Before: the schema'd int16 crashed the batch in Arrow (``Could not convert 1 with type
    int: tried to convert to boolean``), the schema-less base64 price went to dead letters."""
    rows = _decoded([message("mysql", "2.x", "c", after=row("mysql", i, "12.34", in_stock=i),
                             schemas=schemas) for i in (0, 1, 2)])
    assert [(r["id"], r["in_stock"], r["price"], r["_error"]) for r in rows[:2]] == [
        (0, False, Decimal("12.3400"), None), (1, True, Decimal("12.3400"), None)]
    bad = rows[2]
    assert bad["id"] is None and bad["offset"] == 2 and bad["value"] is not None
    carried = "int16" if schemas else "JSON number"
    assert bad["_error"].startswith(f"column 'in_stock': cannot read 2 ({carried}) as boolean")


def test_a_value_arrow_refuses_becomes_a_dead_letter_not_a_failed_batch() -> None:
    schema = output_schema((("id", "int"),))
    base = {"value": b"{}", "topic": "t", "partition": 0, "offset": 0, "timestamp": STAMP,
            "_op": "c", "_pos": Decimal(0), "_ts": STAMP}
    batch = to_batch([{**base, "id": 1}, {**base, "id": 2**40, "offset": 1}], schema)
    assert batch.column("id").to_pylist() == [1, None]
    assert batch.column("_error").to_pylist()[0] is None
    assert batch.column("_error").to_pylist()[1].startswith(
        "column 'id': cannot store 1099511627776 as int32")
