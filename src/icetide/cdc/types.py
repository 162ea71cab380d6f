"""Spark types of CDC tables (pure): which type changes Iceberg applies in place."""

from __future__ import annotations

import re

_DECIMAL_RE = re.compile(r"^decimal\((\d+),(\d+)\)$")


def decimal_parts(spark: str) -> tuple[int, int] | None:
    """``decimal(10,4)`` → ``(10, 4)``; other types → None."""
    m = _DECIMAL_RE.match(spark.replace(" ", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_widening(old: str, new: str) -> bool:
    """Whether Iceberg can promote ``old`` to ``new`` in place (int→bigint, float→double,
    decimal(p,s)→decimal(p',s) with p' > p)."""
    if (old, new) in {("int", "bigint"), ("float", "double")}:
        return True
    a, b = decimal_parts(old), decimal_parts(new)
    return a is not None and b is not None and a[1] == b[1] and b[0] > a[0]
