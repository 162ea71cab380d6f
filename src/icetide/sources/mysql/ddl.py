"""MySQL DDL statements in the binlog (pure): which tables a statement touches, and the
column renames an ``ALTER TABLE`` makes (the generic diff is :mod:`icetide.cdc.evolution`)."""

from __future__ import annotations

import re
from typing import Literal

DdlKind = Literal["alter", "create", "drop", "rename", "truncate", "other"]


_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_NAME = rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?"
_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.S)
_DDL = [
    ("alter", re.compile(rf"^ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?{_NAME}",
                         re.I)),
    ("create", re.compile(rf"^CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+"
                          rf"(?:IF\s+NOT\s+EXISTS\s+)?{_NAME}", re.I)),
    ("drop", re.compile(rf"^DROP\s+(?:TEMPORARY\s+)?TABLES?\s+(?:IF\s+EXISTS\s+)?{_NAME}", re.I)),
    ("rename", re.compile(rf"^RENAME\s+TABLES?\s+{_NAME}", re.I)),
    ("truncate", re.compile(rf"^TRUNCATE\s+(?:TABLE\s+)?{_NAME}", re.I)),
]
_RENAME_COL = re.compile(rf"RENAME\s+COLUMN\s+({_IDENT})\s+TO\s+({_IDENT})", re.I)
_CHANGE_COL = re.compile(rf"CHANGE\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?({_IDENT})\s+({_IDENT})",
                         re.I)


def unquote(identifier: str) -> str:
    """```a``b``` → ``a`b``; bare names unchanged."""
    if identifier.startswith("`") and identifier.endswith("`"):
        return identifier[1:-1].replace("``", "`")
    return identifier


def strip_comments(sql: str) -> str:
    return _COMMENT.sub(" ", sql).strip()


def classify_ddl(query: str, default_db: str) -> tuple[DdlKind, list[str]]:
    """The kind of a DDL statement and the qualified tables it names first.

    Only the first table of multi-table DROP/RENAME is returned by the regex; the
    caller treats any hit on a followed table as fatal for those kinds anyway.
    """
    sql = strip_comments(query)
    for kind, pattern in _DDL:
        m = pattern.match(sql)
        if m:
            first, second = unquote(m.group(1)), m.group(2)
            name = f"{first}.{unquote(second)}" if second else f"{default_db}.{first}"
            names = [name]
            if kind in ("drop", "rename", "truncate"):
                names += _other_tables(sql[m.end():], default_db)
            return kind, names  # type: ignore[return-value]
    return "other", []


def _other_tables(rest: str, default_db: str) -> list[str]:
    names = []
    for m in re.finditer(rf"(?:,|\bTO\b)\s*{_NAME}", rest, re.I):
        first, second = unquote(m.group(1)), m.group(2)
        names.append(f"{first}.{unquote(second)}" if second else f"{default_db}.{first}")
    return names


def parse_renames(query: str) -> dict[str, str]:
    """Column renames in an ALTER TABLE: ``{old: new}`` (RENAME COLUMN and CHANGE)."""
    sql = strip_comments(query)
    out: dict[str, str] = {}
    for pattern in (_RENAME_COL, _CHANGE_COL):
        for m in pattern.finditer(sql):
            old, new = unquote(m.group(1)), unquote(m.group(2))
            if old != new:
                out[old] = new
    return out
