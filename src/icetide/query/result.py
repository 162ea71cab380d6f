"""The engine-neutral result of a query."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class QueryResult:
    """Column names and rows (plain Python values) of a query.

    ``truncated`` is true when more rows existed than the ``max_rows`` asked for.
    """

    columns: list[str]
    rows: list[tuple[object, ...]]
    truncated: bool = False

    def records(self) -> list[dict[str, object]]:
        """Rows as ``{column: value}`` dicts (later duplicate column names win)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


#: An engine's record type read as ``{field: value}`` (``None``: not one of its records).
RecordFields = Callable[[object], "Mapping[str, object] | None"]


def plain_value(value: object, fields: RecordFields) -> object:
    """An engine's value as plain Python: its records (``fields`` reads them: a Spark
    ``Row``, a Trino ROW) become dicts by field name, maps and arrays are walked."""
    record = fields(value)
    if record is not None:
        return {k: plain_value(v, fields) for k, v in record.items()}
    if isinstance(value, dict):
        return {k: plain_value(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_value(v, fields) for v in value]
    return value
