"""Collapsing a batch to the last change per key; Spark-ready rows (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from icetide.errors import SchemaChangeError
from icetide.sources.mysql.changes import Change, Op, collapse, snapshot_rows, to_rows
from icetide.sources.mysql.schema import build_schema

SCHEMA = build_schema("shop", "products", [
    ("productId", "varchar(10)", "NO"), ("product_price", "decimal(10,4)", "YES"),
    ("update_time", "timestamp", "YES"), ("made", "datetime", "YES")], ["productId"])
T = SCHEMA.qualified


def row(pid: str, price: str = "1.0000", **extra: Any) -> dict[str, Any]:
    return {"productId": pid, "product_price": Decimal(price),
            "update_time": dt.datetime(2024, 1, 1, 8), "made": dt.datetime(2024, 1, 1, 8),
            **extra}


def ch(op: Op, seq: int, before: dict[str, Any] | None = None,
       after: dict[str, Any] | None = None) -> Change:
    return Change(T, op, before, after, seq, 1_700_000_000)


def test_last_change_per_key_in_binlog_order() -> None:
    changes = [
        ch("c", 1, after=row("1", "1")),
        ch("c", 2, after=row("2", "2")),
        ch("u", 3, row("1", "1"), row("1", "5")),
        ch("d", 4, before=row("2", "2")),
        ch("c", 5, after=row("3", "3")),
        ch("u", 6, row("1", "5"), row("1", "6")),
    ]
    out = collapse(changes, ["productId"])
    assert [(c.op, c.image["productId"], c.seq) for c in out] == [
        ("d", "2", 4), ("c", "3", 5), ("u", "1", 6)]
    assert out[-1].image["product_price"] == Decimal("6")


def test_insert_then_delete_keeps_the_delete() -> None:
    # after a resumed snapshot the target may already hold the key
    out = collapse([ch("c", 1, after=row("9")), ch("d", 2, before=row("9"))], ["productId"])
    assert [(c.op, c.seq) for c in out] == [("d", 2)]


def test_key_changing_update_is_delete_plus_insert() -> None:
    out = collapse([ch("u", 1, row("1"), row("7")), ch("c", 2, after=row("1", "2"))],
                   ["productId"])
    assert [(c.op, c.image["productId"]) for c in out] == [("c", "7"), ("c", "1")]
    out = collapse([ch("u", 1, row("1"), row("7"))], ["productId"])
    assert [(c.op, c.image["productId"]) for c in out] == [("d", "1"), ("c", "7")]


def test_rows_have_spark_values_and_metadata() -> None:
    rows = to_rows([ch("u", 12, row("1"), row("1", "2.5")), ch("d", 13, before=row("2"))],
                   SCHEMA)
    utc = dt.UTC
    assert rows[0] == ("1", Decimal("2.5"), dt.datetime(2024, 1, 1, 8, tzinfo=utc),
                       dt.datetime(2024, 1, 1, 8), "u", Decimal(12),
                       dt.datetime.fromtimestamp(1_700_000_000, utc))
    assert rows[1][0] == "2" and rows[1][4] == "d"


def test_missing_columns_are_null_and_unknown_columns_stop() -> None:
    partial = {"productId": "1", "product_price": None}
    assert to_rows([ch("c", 1, after=partial)], SCHEMA)[0][:4] == ("1", None, None, None)
    with pytest.raises(SchemaChangeError, match=r"\['extra'\].*resnapshot shop.products"):
        to_rows([ch("c", 1, after=row("1", extra=1))], SCHEMA)


def test_snapshot_rows_carry_the_view() -> None:
    rows = snapshot_rows(SCHEMA, [("1", Decimal("1"), dt.datetime(2024, 1, 1), None)], 77, 5)
    assert rows[0][1:] == (Decimal("1"), dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None, "r",
                           Decimal(77), dt.datetime.fromtimestamp(5, dt.UTC))
