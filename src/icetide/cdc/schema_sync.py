"""Keep a CDC target's Iceberg schema in step with its upstream table (JVM side).

Before a batch's rows are merged, :func:`reconcile` compares the target's columns with
the schema the rows were read with and applies the difference in place
(:func:`~icetide.cdc.evolution.diff_schemas`):

* ``ADD COLUMN``   → ``ALTER TABLE .. ADD COLUMN`` (optional; old rows read null)
* rename           → ``ALTER TABLE .. RENAME COLUMN`` (Iceberg field ids: data kept)
* widening         → ``ALTER TABLE .. ALTER COLUMN .. TYPE``
* NOT NULL → NULL  → ``ALTER TABLE .. ALTER COLUMN .. DROP NOT NULL``
* DROP COLUMN      → policy ``keep`` (default: the column stays, new rows carry null),
  ``drop`` or ``fail``

Anything else raises :class:`~icetide.errors.SchemaChangeError` before a row is written.
The table's changelog (``before``/``after`` structs) follows every action. Why a diff
against the target (each step idempotent across a crash) and the rename limit:
docs/cdc.md ("What a flow does", 5).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icetide.cdc.evolution import (
    AddColumn,
    DropColumn,
    DropPolicy,
    EvolutionAction,
    MakeNullable,
    RenameColumn,
    WidenColumn,
    compose_renames,
    diff_schemas,
)
from icetide.cdc.schema import TableSchema
from icetide.tables.sql import quote_ident as q
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: Columns a CDC target stores besides the upstream ones: the source's ``_pos`` sequence
#: (stored as ``_cdc_pos``: ``_pos`` is Iceberg's row-position metadata column, which
#: merge-on-read uses as a row id) and the upstream commit time.
SEQUENCE_COLUMN = "_cdc_pos"
META_COLUMNS = ((SEQUENCE_COLUMN, "decimal(38,0)"), ("_ts", "timestamp"))
_META = frozenset(n for n, _ in META_COLUMNS)
IMAGES = ("before", "after")


@dataclass(frozen=True)
class TargetColumn:
    """A target column as the schema diff sees it."""

    name: str
    spark_type: str
    nullable: bool


def target_columns(spark: SparkSession, ident: str) -> list[TargetColumn]:
    """The target's upstream columns (metadata columns left out)."""
    return [TargetColumn(f.name, f.dataType.simpleString(), f.nullable)
            for f in spark.table(ident).schema.fields if f.name not in _META]


def renames_of(table: str, info: Mapping[str, Any]) -> dict[str, str]:
    """Column renames of ``table`` announced by a batch (its actions and DDL statements)."""
    out: dict[str, str] = {}
    for record in info.get("ddl", []):
        if table in record.get("tables", []):
            out = compose_renames(out, dict(record.get("renames", {})))
    for action in info.get("schema_changes", {}).get(table, []):
        if action.get("op") == "rename":
            out = compose_renames(out, {str(action["old"]): str(action["new"])})
    return out


def reconcile(spark: SparkSession, ident: str, changelog: str | None, source: TableSchema,
              keys: Sequence[str], renames: Mapping[str, str],
              drop_policy: DropPolicy = "keep") -> list[EvolutionAction]:
    """Make ``ident`` (and its changelog) able to hold rows of ``source``; returns actions."""
    current = target_columns(spark, ident)
    have, upstream = {c.name for c in current}, set(source.names)
    # hints of DDL not yet reflected in these rows (or already applied) are left out
    usable = {a: b for a, b in renames.items()
              if a in have and b not in have and b in upstream and a not in upstream}
    actions = diff_schemas(ident, current, keys, source.columns, source.primary_key,
                           usable, drop_policy)
    applied = [a for a in actions if not (isinstance(a, DropColumn) and a.policy == "keep")]
    for action in applied:
        for statement in action_sql(ident, action):
            spark.sql(statement)
        if changelog is not None and isinstance(action, AddColumn | RenameColumn | WidenColumn):
            for image in IMAGES:
                for statement in action_sql(changelog, action, prefix=f"{image}."):
                    spark.sql(statement)
    if applied:
        log.info("schema of %s evolved: %s", ident, applied)
    return applied


def action_sql(ident: str, action: EvolutionAction, prefix: str = "") -> list[str]:
    """The ALTER TABLE statements of one action (``prefix``: a struct column, e.g. ``after.``)."""
    table = quote_qualified(ident)
    path = ".".join(q(p) for p in prefix.strip(".").split(".") if p)
    at = f"{path}." if path else ""
    if isinstance(action, AddColumn):
        return [f"ALTER TABLE {table} ADD COLUMN {at}{q(action.name)} {action.spark_type}"]
    if isinstance(action, RenameColumn):
        return [f"ALTER TABLE {table} RENAME COLUMN {at}{q(action.old)} TO {q(action.new)}"]
    if isinstance(action, WidenColumn):
        return [f"ALTER TABLE {table} ALTER COLUMN {at}{q(action.name)} TYPE {action.new_type}"]
    if isinstance(action, MakeNullable):
        return [f"ALTER TABLE {table} ALTER COLUMN {at}{q(action.name)} DROP NOT NULL"]
    if action.policy == "drop":
        return [f"ALTER TABLE {table} DROP COLUMN {at}{q(action.name)}"]
    return []
