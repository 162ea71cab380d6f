"""Iceberg partition fields from SDP-style ``partition_cols`` strings (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from icetide.errors import PipelineError
from icetide.pipelines.names import check_column, check_stored_column
from icetide.tables.sql import quote_ident

_TRANSFORM_ALIASES = {
    "identity": "identity",
    "year": "years", "years": "years",
    "month": "months", "months": "months",
    "day": "days", "days": "days", "date": "days",
    "hour": "hours", "hours": "hours", "date_hour": "hours",
    "bucket": "bucket",
    "truncate": "truncate",
}
_CALL_RE = re.compile(r"^\s*([A-Za-z_]+)\s*\((.*)\)\s*$", re.DOTALL)
_PARTITION_HELP = (
    "use a column ('country'), days(ts), hours(ts), months(ts), years(ts), "
    "bucket(16, id) or truncate(4, name)"
)


@dataclass(frozen=True)
class PartitionField:
    """One Iceberg partition field: ``transform(arg, column)``; ``arg`` for bucket/truncate."""

    transform: str
    column: str
    arg: int | None = None

    def __post_init__(self) -> None:
        if self.transform not in set(_TRANSFORM_ALIASES.values()):
            raise PipelineError(
                f"unknown partition transform {self.transform!r}: {_PARTITION_HELP}"
            )
        check_stored_column(self.column, "partition column")
        needs_arg = self.transform in ("bucket", "truncate")
        if needs_arg and (not isinstance(self.arg, int) or self.arg < 1):
            raise PipelineError(
                f"{self.transform}({self.arg!r}, {self.column}) needs a positive integer "
                f"first argument, e.g. {self.transform}(16, {self.column})"
            )
        if not needs_arg and self.arg is not None:
            raise PipelineError(f"{self.transform}({self.column}) takes no number argument")

    @property
    def source_column(self) -> str:
        """The top-level column the field is derived from."""
        return self.column.split(".")[0]

    def to_sql(self) -> str:
        """The field as Iceberg Spark DDL: ``days(`eventTime`)``, ``bucket(16, `id`)``."""
        col = ".".join(quote_ident(part) for part in self.column.split("."))
        if self.transform == "identity":
            return col
        if self.arg is not None:
            return f"{self.transform}({self.arg}, {col})"
        return f"{self.transform}({col})"


def parse_partition_field(text: str) -> PartitionField:
    """Parse ``"days(eventTime)"``, ``"bucket(16, productId)"``, ``"truncate(4, x)"``, ``"col"``."""
    if not isinstance(text, str) or not text.strip():
        raise PipelineError(f"partition column {text!r} is empty: {_PARTITION_HELP}")
    match = _CALL_RE.match(text)
    if match is None:
        return PartitionField("identity", check_column(text.strip(), "partition column"))
    func, raw_args = match.group(1).lower(), [a.strip() for a in match.group(2).split(",")]
    transform = _TRANSFORM_ALIASES.get(func)
    if transform is None:
        raise PipelineError(f"unknown partition transform in {text!r}: {_PARTITION_HELP}")
    if transform in ("bucket", "truncate"):
        if len(raw_args) != 2 or not raw_args[0].isdigit():
            raise PipelineError(
                f"partition field {text!r}: write {transform}(N, column) with the number "
                f"first, e.g. {transform}(16, {raw_args[-1] or 'id'})"
            )
        return PartitionField(transform, check_column(raw_args[1], "partition column"),
                              int(raw_args[0]))
    if len(raw_args) != 1:
        raise PipelineError(f"partition field {text!r}: {func}() takes one column, e.g. {func}(ts)")
    return PartitionField(transform, check_column(raw_args[0], "partition column"))


def parse_partition_cols(values: Sequence[str] | None) -> tuple[PartitionField, ...]:
    """Parse a ``partition_cols`` list; repeated fields are an error."""
    if values is None:
        return ()
    if isinstance(values, str):
        raise PipelineError(f"partition_cols={values!r} must be a list: write [{values!r}]")
    fields = tuple(parse_partition_field(v) for v in values)
    seen: set[str] = set()
    for f in fields:
        if f.to_sql() in seen:
            raise PipelineError(f"partition field {f.to_sql()!r} is listed twice: remove one")
        seen.add(f.to_sql())
    return fields
