"""Which tables a MySQL source follows: include/exclude regexes over ``db.table``.

Patterns are Python regular expressions matched against the whole qualified name
(``re.fullmatch``), case-sensitively (MySQL table names are case-sensitive on Linux).
A plain name such as ``user_db.products`` works as a pattern; escape the dot
(``user_db\\.products``) to be exact. A table is followed when it matches at least one
include pattern and no exclude pattern. System schemas are never followed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from icetide.errors import ConfigError, SourceError

SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


def qualify(db: str, table: str) -> str:
    """``db.table``."""
    return f"{db}.{table}"


def split_name(qualified: str) -> tuple[str, str]:
    """``db.table`` → ``(db, table)``; the database name may not contain a dot."""
    db, sep, table = qualified.partition(".")
    if not sep or not db or not table:
        raise SourceError(f"table name {qualified!r} must be qualified as 'db.table'")
    return db, table


def _compile(patterns: Sequence[str], kind: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(
                f"invalid {kind} pattern {pattern!r}: {exc}; patterns are Python regexes "
                r"matched against 'db.table', e.g. 'user_db\.prod.*'"
            ) from None
    return tuple(compiled)


class TableFilter:
    """Include/exclude regexes over qualified table names."""

    def __init__(self, include: Sequence[str], exclude: Sequence[str] = ()) -> None:
        if isinstance(include, str) or isinstance(exclude, str):
            raise ConfigError(
                f"include/exclude must be lists of patterns, got {include!r} / {exclude!r}"
            )
        if not include:
            raise ConfigError(
                r"a MySQL source needs at least one include pattern, e.g. ['user_db\..*']"
            )
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self._inc = _compile(include, "include")
        self._exc = _compile(exclude, "exclude")

    def matches(self, qualified: str) -> bool:
        """Whether ``db.table`` is followed."""
        db = qualified.partition(".")[0]
        if db.lower() in SYSTEM_SCHEMAS:
            return False
        if not any(p.fullmatch(qualified) for p in self._inc):
            return False
        return not any(p.fullmatch(qualified) for p in self._exc)

    def select(self, names: Iterable[str]) -> list[str]:
        """The followed names, sorted."""
        return sorted(n for n in names if self.matches(n))

    def __repr__(self) -> str:
        return f"TableFilter(include={list(self.include)!r}, exclude={list(self.exclude)!r})"
