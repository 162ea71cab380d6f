"""Names in a pipeline: identifiers, column references, ``db.table`` qualification."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from icetide.errors import PipelineError

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
IDENT_RE = re.compile(rf"^{_IDENT}$")
COLUMN_RE = re.compile(rf"^{_IDENT}(?:\.{_IDENT})*$")


@dataclass(frozen=True)
class SourceLocation:
    """Where something was declared, for error messages."""

    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}"


def where(location: SourceLocation | None) -> str:
    """``"file.py:12: "`` or ``""`` — a prefix for messages about a declaration."""
    return f"{location}: " if location is not None else ""


def _matching(value: str, pattern: re.Pattern[str], what: str, problem: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise PipelineError(f"{what} {value!r} {problem}")
    return value


def check_identifier(value: str, what: str) -> str:
    """``value`` if it is a plain SQL identifier, else a PipelineError naming ``what``."""
    return _matching(value, IDENT_RE, what,
                     "is not a plain identifier: use letters, digits and '_' and start with a "
                     "letter or '_', e.g. 'user_id'")


def check_column(value: str, what: str) -> str:
    """A column reference: an identifier, a dotted nested field, or a `backticked` name."""
    if isinstance(value, str) and len(value) > 2 and value[0] == value[-1] == "`":
        return value[1:-1]
    return _matching(value, COLUMN_RE, what,
                     "is not a column name: write a plain name like 'productId', a nested "
                     "field like 'user.id', or quote it with backticks")


def check_stored_column(value: str, what: str) -> str:
    """A column name as stored in a spec (already unquoted): any non-empty name w/o backticks."""
    if not isinstance(value, str) or not value.strip() or "`" in value:
        raise PipelineError(f"{what} {value!r} must be a non-empty column name without backticks")
    return value


def qualify_name(name: str, database: str | None, catalog: str | None = None) -> str:
    """``table`` → ``database.table``; ``db.table`` as is; ``catalog.db.table`` → ``db.table``.

    A catalog prefix must be the pipeline's own catalog: icetide writes one catalog.
    """
    if not isinstance(name, str) or not name:
        raise PipelineError(f"table name {name!r} must be a non-empty string like 'db.table'")
    parts = name.split(".")
    for part in parts:
        check_identifier(part, f"table name {name!r}: part")
    if len(parts) == 1:
        if database is None:
            raise PipelineError(
                f"table name {name!r} has no database: write 'db.{name}' or set "
                "'database:' in the pipeline spec file"
            )
        return f"{check_identifier(database, 'database')}.{name}"
    if len(parts) == 2:
        return name
    if len(parts) == 3 and catalog is not None and parts[0] == catalog:
        return f"{parts[1]}.{parts[2]}"
    raise PipelineError(
        f"table name {name!r} must be 'table', 'db.table' or '{catalog or '<catalog>'}.db.table' "
        f"(this pipeline writes catalog {catalog!r}); drop the extra prefix"
    )


def caller_location() -> SourceLocation:
    """Where the user called the API function that called us (two frames up)."""
    frame = sys._getframe(2)
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno)


@contextmanager
def located(location: SourceLocation | None) -> Iterator[None]:
    """Prefix PipelineErrors raised inside with the declaration's ``file:line``."""
    try:
        yield
    except PipelineError as exc:
        if location is None or str(exc).startswith(str(location)):
            raise
        raise PipelineError(f"{location}: {exc}") from None
