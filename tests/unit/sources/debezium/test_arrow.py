"""The ``mapInArrow`` decoder: no message fails the batch, whatever its values."""

from __future__ import annotations

import contextlib
import datetime as dt
import random
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
import pytest
from tests.unit.sources.debezium.connectors import COLUMNS, PG_COLUMNS, message, row

from icetide.sources.debezium.arrow import EnvelopeDecoder, output_schema, to_batch
from icetide.sources.debezium.decode import BadMessage, columns_of

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


_ODD = [None, [], {}, "", "x", "AeII", "2024-13-45", 1.5, -1, 2, True, 2**63 - 1, -(2**63),
        1e308, {"scale": "x", "value": 5}, {"field": 3}, [{"field": None}]]


def _mutated(node: Any, rng: random.Random) -> Any:
    """``node`` with about one value in eight replaced by an odd one, anywhere in the tree."""
    if rng.random() < 0.12:
        return rng.choice(_ODD)
    if isinstance(node, dict):
        return {k: _mutated(v, rng) for k, v in node.items()}
    if isinstance(node, list):
        return [_mutated(v, rng) for v in node]
    return node


@pytest.mark.parametrize("seed", range(4))
def test_no_message_fails_the_batch(seed: int) -> None:
    """Messages of every connector shape, mangled at random: each becomes a row, a dead
    letter or a skipped tombstone — never an exception, for declared or learnt columns."""
    rng = random.Random(seed)
    shapes = [orjson.loads(message(c, v, op, after=row(c, 1, "1.5"), before=row(c, 1, "1"),
                                   schemas=s))
              for c in ("mysql", "postgresql") for v in ("2.x", "3.x") for s in (True, False)
              for op in ("c", "u", "d")]
    values = [orjson.dumps(_mutated(rng.choice(shapes), rng)) for _ in range(300)]
    learnt = columns_of(orjson.loads(message("postgresql", "3.x", "c"))["schema"])
    for columns in (tuple(COLUMNS.items()), tuple(PG_COLUMNS.items()), learnt):
        batches = list(EnvelopeDecoder(columns, ("id",))(iter([_kafka(values)])))
        assert sum(b.num_rows for b in batches) == len(values)
    for value in values:
        body = orjson.loads(value)
        schema = body.get("schema") if isinstance(body, dict) else None
        if schema is not None:
            with contextlib.suppress(BadMessage):
                columns_of(schema)
