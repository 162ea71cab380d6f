"""MySQL column type → Spark type mapping and value converters (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from icetide.cdc.types import is_widening
from icetide.errors import SourceError
from icetide.sources.mysql.types import (
    TypeOptions,
    converter,
    format_time,
    parse_column_type,
    spark_type,
)


@pytest.mark.parametrize(
    ("column_type", "expected"),
    [
        ("decimal(10,4)", "decimal(10,4)"),
        ("timestamp", "timestamp"),
        ("timestamp(6)", "timestamp"),
        ("varchar(255)", "string"),
        ("int(11)", "int"),
        ("int", "int"),
        ("int(10) unsigned", "bigint"),
        ("mediumint(8) unsigned", "int"),
        ("smallint(6)", "int"),
        ("bigint(20)", "bigint"),
        ("bigint(20) unsigned", "decimal(20,0)"),
        ("bigint unsigned zerofill", "decimal(20,0)"),
        ("datetime", "timestamp_ntz"),
        ("datetime(3)", "timestamp_ntz"),
        ("date", "date"),
        ("tinyint(1)", "int"),
        ("tinyint(4)", "int"),
        ("double", "double"),
        ("float", "float"),
        ("text", "string"),
        ("longtext", "string"),
        ("json", "string"),
        ("enum('a','b''c')", "string"),
        ("set('x','y')", "string"),
        ("blob", "binary"),
        ("varbinary(16)", "binary"),
        ("bit(1)", "boolean"),
        ("bit(12)", "bigint"),
        ("year(4)", "int"),
        ("time(3)", "string"),
        ("char(3)", "string"),
    ],
)
def test_mapping(column_type: str, expected: str) -> None:
    assert spark_type(column_type) == expected


def test_tinyint1_as_boolean_is_opt_in() -> None:
    assert spark_type("tinyint(1)", TypeOptions(tinyint1_as_boolean=True)) == "boolean"
    assert spark_type("tinyint(2)", TypeOptions(tinyint1_as_boolean=True)) == "int"


def test_unsupported_and_too_wide_types_name_the_type() -> None:
    with pytest.raises(SourceError, match="geometry"):
        spark_type("geometry")
    with pytest.raises(SourceError, match=r"decimal\(65,30\).*38"):
        spark_type("decimal(65,30)")


def test_parse_enum_members_in_order() -> None:
    parsed = parse_column_type("enum('b','a','it''s')")
    assert parsed.base == "enum"
    assert parsed.members() == ["b", "a", "it's"]


def test_members_keep_their_case_commas_and_parentheses() -> None:
    assert parse_column_type("SET('B','a, (b)','c\\\\d')").members() == ["B", "a, (b)", "c\\d"]
    assert converter("set('B','a')", "string")({"a", "B"}) == "B,a"


@pytest.mark.parametrize(("column_type", "parsed"), [
    ("INT(11) UNSIGNED ZEROFILL", ("int", ("11",), True)),
    ("decimal(10,2) unsigned", ("decimal", ("10", "2"), True)),
    ("integer", ("int", (), False)),
    ("numeric(5)", ("decimal", ("5",), False)),
    ("timestamp(6)", ("timestamp", ("6",), False)),
    ("double precision", ("double", (), False)),
])
def test_column_types_parse_to_mysqls_canonical_names(
        column_type: str, parsed: tuple[str, tuple[str, ...], bool]) -> None:
    p = parse_column_type(column_type)
    assert (p.base, p.params, p.unsigned) == parsed


@pytest.mark.parametrize("column_type", ["int(10) frobnicated", "int(10)), (x int", "point",
                                         "unknown type code 245", "enum('a"])
def test_unreadable_column_types_are_unsupported_naming_the_type(column_type: str) -> None:
    with pytest.raises(SourceError, match="is not supported by the CDC source; exclude"):
        spark_type(column_type)


def test_widening_rules() -> None:
    assert is_widening("int", "bigint")
    assert is_widening("float", "double")
    assert is_widening("decimal(10,4)", "decimal(12,4)")
    assert not is_widening("decimal(10,4)", "decimal(12,5)")
    assert not is_widening("decimal(12,4)", "decimal(10,4)")
    assert not is_widening("bigint", "int")
    assert not is_widening("int", "string")
    assert not is_widening("bigint", "decimal(20,0)")


def test_timestamp_becomes_aware_utc_and_datetime_stays_naive() -> None:
    naive = dt.datetime(2024, 3, 1, 12, 30, 5, 123000)
    ts = converter("timestamp(3)", "timestamp")(naive)
    assert ts == naive.replace(tzinfo=dt.UTC)
    assert converter("datetime(3)", "timestamp_ntz")(naive) == naive


def test_zero_dates_become_null() -> None:
    assert converter("date", "date")("0000-00-00") is None
    assert converter("datetime", "timestamp_ntz")("0000-00-00 00:00:00") is None
    assert converter("timestamp", "timestamp")("0000-00-00 00:00:00") is None
    assert converter("date", "date")(dt.date(2024, 1, 2)) == dt.date(2024, 1, 2)


def test_string_like_values() -> None:
    to_set = converter("set('x','y','z')", "string")
    assert to_set({"z", "x"}) == "x,z"  # binlog gives a Python set
    assert to_set("x,z") == "x,z"  # a query gives text
    assert converter("json", "string")({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert converter("time", "string")(dt.timedelta(hours=-1, seconds=-2)) == "-01:00:02"
    assert converter("varchar(3)", "string")(b"ab") == "ab"


def test_time_format() -> None:
    assert format_time(dt.timedelta(hours=838, minutes=59, seconds=59)) == "838:59:59"
    assert format_time(dt.timedelta(seconds=1, microseconds=500)) == "00:00:01.000500"


def test_bits_numbers_and_decimals() -> None:
    assert converter("bit(1)", "boolean")("1") is True  # binlog: '1'
    assert converter("bit(1)", "boolean")(b"\x00") is False  # query: bytes
    assert converter("tinyint(1)", "boolean")(2) is True
    assert converter("bit(12)", "bigint")("000000000101") == 5
    assert converter("bit(12)", "bigint")(b"\x00\x05") == 5
    assert converter("bigint unsigned", "decimal(20,0)")(2**64 - 1) == Decimal(2**64 - 1)
    assert converter("decimal(10,4)", "decimal(10,4)")(Decimal("11.1100")) == Decimal("11.11")
    assert converter("float", "float")(1) == 1.0
    assert converter("int", "int")(None) is None
    assert converter("blob", "binary")("ab") == b"ab"


@pytest.mark.parametrize(
    ("decoded", "actual"),
    [  # (what mysql-replication 1.0.17 returns, what the server stored), measured
        ("-12:30:15.75", "-12:30:15.25"),
        ("-00:00:01.999999", "-00:00:01.000001"),
        ("-838:59:58.000001", "-838:59:58.999999"),
        ("-00:00:00.999999", "-00:00:00.000001"),
        ("-00:00:00.5", "-00:00:00.5"),
        ("-01:00:00", "-01:00:00"),
        ("12:30:15.25", "12:30:15.25"),
    ],
)
def test_negative_fractional_time_from_the_binlog_is_repaired(decoded: str, actual: str) -> None:
    from icetide.sources.mysql.tablemap import fix_negative_time

    def parse(text: str) -> dt.timedelta:
        sign = -1 if text.startswith("-") else 1
        h, m, s = text.lstrip("-").split(":")
        return sign * dt.timedelta(hours=int(h), minutes=int(m), seconds=float(s))

    assert fix_negative_time(parse(decoded)) == parse(actual)
