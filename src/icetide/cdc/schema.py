"""The table-schema model of CDC (pure): what an upstream table looks like to icetide.

A :class:`TableSchema` is a source's view of one upstream table: its columns in ordinal
order with the source's own type text, the mapped Spark type and nullability, and the
primary key. Sources build them (MySQL from ``information_schema``, Debezium from the
envelope); :mod:`icetide.cdc.evolution` diffs two of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from icetide.errors import SourceError


@dataclass(frozen=True)
class Column:
    """One column: name, the source's own type text (e.g. MySQL ``COLUMN_TYPE``), the Spark
    type it maps to, nullability."""

    name: str
    column_type: str
    spark_type: str
    nullable: bool = True

    def to_json(self) -> list[object]:
        return [self.name, self.spark_type, self.nullable, self.column_type]


@dataclass(frozen=True)
class TableSchema:
    """Columns (ordinal order) and primary key of ``db.table``."""

    db: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise SourceError(f"table {self.qualified} has no column {name!r}; it has {self.names}")

    def to_json(self) -> dict[str, object]:
        return {"table": self.qualified, "primary_key": list(self.primary_key),
                "columns": [c.to_json() for c in self.columns]}
