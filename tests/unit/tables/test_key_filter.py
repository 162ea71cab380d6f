"""Key predicates added to a MERGE's ON condition (no JVM; behaviour on Spark in
tests/integration/tables/test_merge_key_filter.py)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

from icetide.lake.key_filter import in_sql, literal, range_sql, supported
from icetide.tables.merge_engines import deduplicate
from icetide.tables.merge_sql import MergeSpec, merge_sql


@pytest.mark.parametrize(("value", "type_name", "expected"), [
    (5, "tinyint", "5Y"), (-7, "smallint", "-7S"), (42, "int", "42"),
    (2**40, "bigint", "1099511627776L"),
    ("it's \\ a\nb", "string", "'it\\'s \\\\ a\\nb'"), ("ü😀", "string", "'ü😀'"),
    (Decimal("1.5000"), "decimal(10,4)", "CAST('1.5000' AS DECIMAL(10,4))"),
    (Decimal("1E+3"), "decimal(20,0)", "CAST('1000' AS DECIMAL(20,0))"),
    (date(2024, 2, 29), "date", "DATE '2024-02-29'"),
])
def test_literal_is_exact_for_supported_types(value: Any, type_name: str, expected: str) -> None:
    assert supported(type_name)
    assert literal(value, type_name) == expected


@pytest.mark.parametrize(("value", "type_name"), [
    (1.5, "double"), (datetime(2024, 1, 1), "timestamp"), (b"x", "binary"), (True, "int"),
    ("5", "int"), (5, "string"), (Decimal("NaN"), "decimal(10,2)"),
])
def test_no_literal_for_unsupported_types_or_mismatched_values(value: Any, type_name: str) -> None:
    assert literal(value, type_name) is None


def test_in_list_is_sorted_distinct_without_nulls() -> None:
    assert in_sql("id", [3, None, 1, 3], "bigint") == "t.`id` IN (1L, 3L)"
    assert in_sql("id", [None], "bigint") is None
    assert in_sql("a`b", ["x"], "string") == "t.`a``b` IN ('x')"
    assert in_sql("f", [1.0], "double") is None


def test_range() -> None:
    assert range_sql("id", 1, 9, "int") == "t.`id` BETWEEN 1 AND 9"
    assert range_sql("id", None, None, "int") is None


def test_merge_on_condition_carries_the_key_filter() -> None:
    spec = MergeSpec("`lake`.`db`.`t`", "batch", ["id", "k"], ["id", "k", "v", "_cdc_pos"],
                     op_column="_op")
    engine = deduplicate("_cdc_pos", on_delete="remove")
    plain = merge_sql(engine, spec, collapsed_view="c")
    assert "ON t.`id` = s.`id` AND t.`k` = s.`k`\n" in plain
    text = merge_sql(engine, spec, collapsed_view="c",
                     key_filter="t.`id` IN (1, 2) AND t.`k` IN ('a OR b')")
    assert ("ON t.`id` = s.`id` AND t.`k` = s.`k` AND "
            "(t.`id` IN (1, 2) AND t.`k` IN ('a OR b'))\n") in text
    assert text.replace(" AND (t.`id` IN (1, 2) AND t.`k` IN ('a OR b'))", "") == plain
