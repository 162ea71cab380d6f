"""Schema evolution of followed tables (pure): diff two table schemas into actions.

Supported, turned into :data:`EvolutionAction` values for the target table:

* ``ADD COLUMN``                       → :class:`AddColumn` (always optional in Iceberg)
* a rename the source reports (MySQL: ``RENAME COLUMN a TO b`` / ``CHANGE a b`` in the DDL
  text) → :class:`RenameColumn`; a diff alone cannot tell a rename from drop + add, so
  without one it is drop + add
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

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, Protocol

from icetide.cdc.types import is_widening
from icetide.errors import SchemaChangeError

DropPolicy = Literal["keep", "drop", "fail"]


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
