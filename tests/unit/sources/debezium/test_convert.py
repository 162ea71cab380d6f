"""Values become their declared column type only where nothing is lost."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from icetide.sources.debezium.convert import Mismatch, convert

UTC = dt.UTC
NOON = dt.datetime(2024, 1, 2, 12, tzinfo=UTC)


@pytest.mark.parametrize(("value", "declared", "schemaless", "expected"), [
    (1, "boolean", False, True), (0, "boolean", True, False), ("true", "boolean", True, True),
    (True, "int", False, 1), (2**31 - 1, "int", False, 2**31 - 1), (7, "bigint", False, 7),
    (2.0, "int", True, 2), ("12", "int", True, 12), (Decimal("5.000"), "bigint", False, 5),
    (2**53, "double", False, 2.0**53), (Decimal("12.3400"), "double", False, 12.34),
    (0.1, "float", True, 0.1), (3, "float", False, 3.0),
    (12.34, "decimal(10,4)", False, Decimal("12.3400")),  # decimal.handling.mode=double
    ("12.3400", "decimal(10,4)", False, Decimal("12.3400")),  # string, with its schema
    ("12.3400", "decimal(10,4)", True, Decimal("12.3400")),  # string, schema-less
    ("AeII", "decimal(10,4)", True, Decimal("12.3400")),  # precise, schema-less
    ("AeII", "decimal(10,2)", True, Decimal("1234.00")),  # the declared scale decides
    ("/w==", "decimal(5,2)", True, Decimal("-0.01")),
    ({"scale": 3, "value": "BNI="}, "decimal(10,3)", True, Decimal("1.234")),
    (Decimal("1.5"), "decimal(12,4)", False, Decimal("1.5000")),
    # digits only, a multiple of 4 long: the number for scale 0, base64 for scale > 0
    ("1234", "decimal(10,0)", True, Decimal(1234)),
    ("1234", "decimal(10,2)", True, Decimal("-26588.24")),
    ("1234", "decimal(10,2)", False, Decimal("1234.00")),
    (7, "string", False, "7"), (True, "string", False, "true"), (2**70, "string", True, str(2**70)),
    (1.25, "string", True, "1.25"),
    (Decimal("1E+3"), "string", False, "1000"), ({"a": 1}, "string", True, '{"a":1}'),
    (dt.date(2024, 1, 2), "string", False, "2024-01-02"), (b"ab", "string", False, "ab"),
    (dt.date(2024, 1, 2), "timestamp", False, dt.datetime(2024, 1, 2, tzinfo=UTC)),
    (NOON, "timestamp_ntz", False, dt.datetime(2024, 1, 2, 12)),
    (dt.datetime(2024, 1, 2, tzinfo=UTC), "date", False, dt.date(2024, 1, 2)),
    (19724, "date", True, dt.date(2024, 1, 2)), ("2024-01-02", "date", True, dt.date(2024, 1, 2)),
    (1_704_196_800_000, "timestamp", True, NOON),  # ms: io.debezium.time.Timestamp
    (1_704_196_800_000_000, "timestamp", True, NOON),  # µs: MicroTimestamp
    (1_704_196_800_000_000_000, "timestamp", True, NOON),  # ns: NanoTimestamp
    ("2024-01-02T13:00:00+01:00", "timestamp", True, NOON),
    ("2024-01-02T12:00:00", "timestamp", True, NOON),  # no offset: UTC
    ("AP8=", "binary", True, b"\x00\xff"), (None, "boolean", True, None),
])
def test_lossless_conversions(value: Any, declared: str, schemaless: bool,
                              expected: Any) -> None:
    got = convert(value, declared, schemaless=schemaless)
    assert got == expected and type(got) is type(expected)
    if isinstance(expected, Decimal):
        assert got.as_tuple().exponent == expected.as_tuple().exponent


@pytest.mark.parametrize(("value", "declared", "schemaless", "why"), [
    (2, "boolean", False, "only 0 and 1"), ("yes", "boolean", True, "only 0 and 1"),
    (2**31, "int", False, "outside int's range"), (2**63, "bigint", True, "outside bigint"),
    (2.5, "int", True, "not a whole number"), ("twelve", "int", True, "'twelve' is not a num"),
    (True, "double", False, "bool does not convert"), (2**53 + 1, "double", False, "not exact"),
    (2**24 + 1, "float", False, "not exact as a float"), (1e39, "float", True, "float's range"),
    ("12.34567", "decimal(10,4)", True, "more than 4 digits after the point"),
    (Decimal("1234567.8"), "decimal(10,4)", False, "more than 6 digits before the point"),
    (1e308, "decimal(38,2)", True, "more than 36 digits before the point"),
    ("9999.99995", "decimal(8,4)", True, "more than 4 digits after the point"),
    ("NaN", "decimal(10,2)", True, "'NaN' is not a number"),
    (Decimal("NaN"), "decimal(10,2)", False, "no decimal(10,2) value"),
    (True, "decimal(5,2)", True, "bool"),
    ({"scale": 1}, "decimal(5,2)", True, "struct other than"),
    ("AeII=", "decimal(10,4)", True, "not a number"),
    (b"\xff", "string", False, "not UTF-8"), ([1], "int", True, "a list does not convert"),
    ({"a": 1}, "timestamp", True, "a struct does not convert"),
    (NOON, "date", False, "not midnight UTC"), (1_704_196_800, "timestamp", False, "int does"),
    (19724, "date", False, "int does not convert"), ("%%", "binary", True, "not base64"),
])
def test_lossy_conversions_say_why(value: Any, declared: str, schemaless: bool,
                                   why: str) -> None:
    with pytest.raises(Mismatch, match=why.replace("(", r"\(").replace(")", r"\)")):
        convert(value, declared, schemaless=schemaless)
