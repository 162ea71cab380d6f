"""The engine-neutral result of a query."""

from __future__ import annotations

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
