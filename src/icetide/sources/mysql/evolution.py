"""Schema evolution of followed tables (pure): classify DDL, diff two schemas.

Supported, turned into :data:`EvolutionAction` values for the target table:

* ``ADD COLUMN``                       → :class:`AddColumn` (always optional in Iceberg)
* ``RENAME COLUMN a TO b`` / ``CHANGE a b``  → :class:`RenameColumn` (from the DDL text:
  a diff alone cannot tell a rename from drop + add, so without the DDL it is drop + add)
* widening (INT→BIGINT, FLOAT→DOUBLE, DECIMAL(p,s)→DECIMAL(p',s), p' > p)
                                       → :class:`WidenColumn`; changes that keep the Spark
  type (VARCHAR(10)→VARCHAR(50), TEXT→LONGTEXT) need no action
* NOT NULL → NULL                      → :class:`MakeNullable`
* ``DROP COLUMN``                      → per ``drop_policy``: ``keep`` (default: the
  target keeps the column, new rows carry null) → ``DropColumn(policy="keep")``;
  ``drop`` → ``DropColumn(policy="drop")``; ``fail`` → :class:`SchemaChangeError`

Anything else — narrowing, a type family change, a scale change, a primary-key change,
TRUNCATE / DROP / RENAME TABLE — raises :class:`SchemaChangeError` naming the table,
the column and the remedy (``icetide cdc resnapshot TABLE``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, Protocol

from icetide.errors import SchemaChangeError
from icetide.sources.mysql.types import is_widening

DropPolicy = Literal["keep", "drop", "fail"]
DdlKind = Literal["alter", "create", "drop", "rename", "truncate", "other"]


class ColumnLike(Protocol):
    """What the diff needs of a column (a source :class:`Column` or a target field)."""

    @property
    def name(self) -> str: ...
    @property
    def spark_type(self) -> str: ...
    @property
    def nullable(self) -> bool: ...


@dataclass(frozen=True)
class AddColumn:
    name: str
    spark_type: str
    op: str = "add"


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str
    op: str = "rename"


@dataclass(frozen=True)
class WidenColumn:
    name: str
    old_type: str
    new_type: str
    op: str = "widen"


@dataclass(frozen=True)
class MakeNullable:
    name: str
    op: str = "nullable"


@dataclass(frozen=True)
class DropColumn:
    name: str
    policy: Literal["keep", "drop"]
    op: str = "drop"


EvolutionAction = AddColumn | RenameColumn | WidenColumn | MakeNullable | DropColumn


def action_to_json(action: EvolutionAction) -> dict[str, object]:
    """A JSON-friendly dict with an ``op`` key."""
    return asdict(action)


def _remedy(table: str) -> str:
    return f"re-snapshot the table with `icetide cdc resnapshot {table}`"


# --- DDL text ---------------------------------------------------------------------------

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


def compose_renames(first: Mapping[str, str], then: Mapping[str, str]) -> dict[str, str]:
    """Renames of two DDL statements in a row: ``a→b`` then ``b→c`` is ``a→c``."""
    out = dict(first)
    back = {new: old for old, new in out.items()}
    for old, new in then.items():
        origin = back.pop(old, old)
        out[origin] = new
        if origin == new:
            del out[origin]  # renamed back
    return out


# --- schema diff ------------------------------------------------------------------------

def _compare(table: str, old: ColumnLike, new: ColumnLike) -> list[EvolutionAction]:
    actions: list[EvolutionAction] = []
    if old.spark_type != new.spark_type:
        if not is_widening(old.spark_type, new.spark_type):
            raise SchemaChangeError(
                f"column {table}.{new.name} changed from {old.spark_type} to "
                f"{new.spark_type}, which Iceberg cannot apply in place (only int→bigint, "
                f"float→double, decimal(p,s)→decimal(p',s) with p'>p); {_remedy(table)}"
            )
        actions.append(WidenColumn(new.name, old.spark_type, new.spark_type))
    if not old.nullable and new.nullable:
        actions.append(MakeNullable(new.name))
    return actions


def _check_renames(
    table: str, renames: Mapping[str, str], old: Mapping[str, ColumnLike],
    new: Mapping[str, ColumnLike],
) -> dict[str, str]:
    valid = {}
    for a, b in renames.items():
        if a in old and b in new and a not in new:
            valid[a] = b
        elif a in old or b in new:
            raise SchemaChangeError(
                f"rename {a!r} → {b!r} on {table} does not match the schemas (before: "
                f"{sorted(old)}, after: {sorted(new)}); several DDL statements may have run "
                f"at once; {_remedy(table)}"
            )
    return valid


def diff_schemas(
    table: str,
    old: Sequence[ColumnLike], old_key: Sequence[str],
    new: Sequence[ColumnLike], new_key: Sequence[str],
    renames: Mapping[str, str] | None = None,
    drop_policy: DropPolicy = "keep",
) -> list[EvolutionAction]:
    """Actions turning ``old`` into ``new``, or :class:`SchemaChangeError`."""
    before, after = {c.name: c for c in old}, {c.name: c for c in new}
    moved = _check_renames(table, renames or {}, before, after)
    if [moved.get(k, k) for k in old_key] != list(new_key):
        raise SchemaChangeError(
            f"primary key of {table} changed from {list(old_key)} to {list(new_key)}; "
            f"upserts would use the wrong key: {_remedy(table)}"
        )
    actions: list[EvolutionAction] = [RenameColumn(a, b) for a, b in moved.items()]
    for col in old:
        target = after.get(moved.get(col.name, col.name))
        if target is not None:
            actions += _compare(table, col, target)
        elif drop_policy == "fail":
            raise SchemaChangeError(
                f"column {table}.{col.name} was dropped upstream and drop_policy is 'fail'; "
                f"set drop_policy to 'keep' or 'drop', or {_remedy(table)}"
            )
        else:
            actions.append(DropColumn(col.name, drop_policy))
    renamed_to = set(moved.values())
    actions += [AddColumn(c.name, c.spark_type) for c in new
                if c.name not in before and c.name not in renamed_to]
    return actions
