"""A flow's target table evolves with the flow's code, in place (no rewrite).

Every run compares an existing target with what its flow now produces and declares
(:func:`plan_evolution`), before the first batch, then applies the difference
(:func:`apply_evolution`), as Spark Declarative Pipelines and Iceberg allow:

* a new column → ``ALTER TABLE … ADD COLUMN`` (old rows read null);
* a widened type (int→bigint, float→double, decimal(p,s)→decimal(p',s) with p'>p)
  → ``ALTER TABLE … ALTER COLUMN … TYPE``;
* a primary-key table's changelog ``<t>__changelog`` follows both in its ``before`` and
  ``after`` structs (and a widened key column at its top level);
* a changed ``partition_cols`` → ``ALTER TABLE … ADD / DROP PARTITION FIELD`` (Iceberg
  partition evolution: old files keep their old layout, new ones use the new spec).

Anything else — a column the flow no longer produces (dropped, or renamed: a diff cannot
tell), a narrowing or a change of type family, a new or changed primary key — raises
:class:`~icetide.errors.SchemaChangeError` naming the column and the way out (a full
refresh). ``icetide dry-run`` shows the same plan (:meth:`Evolution.describe`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.cdc.evolution import AddColumn, WidenColumn
from icetide.cdc.schema_sync import action_sql
from icetide.cdc.types import is_widening
from icetide.errors import SchemaChangeError
from icetide.lake.commit import load_table
from icetide.pipelines.partitioning import PartitionField
from icetide.pipelines.schemas import normalize_type
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

ColumnChange = AddColumn | WidenColumn
#: Iceberg's transform names (``Transform.toString()``) → icetide's partition transforms.
_JAVA_TRANSFORMS = {"year": "years", "month": "months", "day": "days", "hour": "hours",
                    "identity": "identity", "bucket": "bucket", "truncate": "truncate"}


@dataclass(frozen=True)
class StoredTable:
    """What an existing table holds: columns (name, type), key, partition fields as DDL."""

    columns: tuple[tuple[str, str], ...]
    keys: tuple[str, ...]
    partitions: tuple[str, ...]


@dataclass(frozen=True)
class Evolution:
    """The in-place changes that make a table fit its flow again."""

    table: str
    columns: tuple[ColumnChange, ...] = ()
    add_partitions: tuple[str, ...] = ()
    drop_partitions: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.columns or self.add_partitions or self.drop_partitions)

    def describe(self) -> list[str]:
        """One sentence per change, as dry-run shows them."""
        out = [f"table {self.table}: add column {c.name} {c.spark_type}"
               if isinstance(c, AddColumn) else
               f"table {self.table}: widen column {c.name} from {c.old_type} to {c.new_type}"
               for c in self.columns]
        out += [f"table {self.table}: drop partition field {p}" for p in self.drop_partitions]
        out += [f"table {self.table}: add partition field {p}" for p in self.add_partitions]
        return out


def _refresh(table: str) -> str:
    return (f"a full refresh rebuilds it: `icetide table refresh {table}`, or drop the table "
            "(and its __changelog) and run again")


def _column_changes(table: str, stored: Sequence[tuple[str, str]],
                    wanted: Sequence[tuple[str, str]]) -> list[ColumnChange]:
    produced = {n.lower(): (n, normalize_type(t)) for n, t in wanted}
    changes: list[ColumnChange] = []
    for name, stored_type in stored:
        hit = produced.pop(name.lower(), None)
        if hit is None:
            raise SchemaChangeError(
                f"table {table}: column {name!r} is in the table but the flow no longer "
                f"produces it (dropped or renamed), which the table cannot follow in place; "
                f"produce {name!r} again (e.g. lit(None).cast('{stored_type}')), or "
                + _refresh(table))
        old, new = normalize_type(stored_type), hit[1]
        if old == new:
            continue
        if not is_widening(old, new):
            raise SchemaChangeError(
                f"table {table}: column {name!r} is {old} in the table but the flow produces "
                f"{new}; only widening evolves in place (int→bigint, float→double, "
                f"decimal precision up): cast it to {old}, or " + _refresh(table))
        changes.append(WidenColumn(name, old, new))
    return changes + [AddColumn(n, t) for n, t in produced.values()]


def plan_evolution(table: str, stored: StoredTable, wanted: Sequence[tuple[str, str]],
                   keys: Sequence[str], partitions: Sequence[str]) -> Evolution:
    """The changes turning ``stored`` into a table of ``wanted`` columns, key ``keys`` and
    partition fields ``partitions`` (DDL as :func:`~icetide.engine.targets.partition_sql`);
    raises :class:`SchemaChangeError` for a change that cannot be made in place."""
    # Iceberg keeps identifier fields as a set: their order says nothing
    if sorted(k.lower() for k in stored.keys) != sorted(k.lower() for k in keys):
        raise SchemaChangeError(
            f"table {table}: primary key {list(keys)} but the table's is {list(stored.keys)}; "
            "a MERGE on another key would corrupt it: keep the key, or " + _refresh(table))
    columns = _column_changes(table, stored.columns, wanted)
    have = {p.lower(): p for p in stored.partitions}
    want = {p.lower(): p for p in partitions}
    return Evolution(table, tuple(columns),
                     add_partitions=tuple(p for k, p in want.items() if k not in have),
                     drop_partitions=tuple(p for k, p in have.items() if k not in want))


def _partition_ddl(java_table: JavaObject) -> tuple[str, ...]:
    schema = java_table.schema()
    out = []
    for field in java_table.spec().fields():
        text = str(field.transform().toString())  # day, bucket[16], truncate[4], void
        name, _, arg = text.rstrip("]").partition("[")
        if name not in _JAVA_TRANSFORMS:  # void: a field dropped from a v1 table
            continue
        column = str(schema.findColumnName(field.sourceId()))
        out.append(PartitionField(_JAVA_TRANSFORMS[name], column,
                                  int(arg) if arg else None).to_sql())
    return tuple(out)


def read_stored(spark: SparkSession, ident: str) -> StoredTable:
    """The columns, key and current partition spec of the existing table ``ident``."""
    java_table = load_table(spark, ident)
    fields = spark.table(ident).schema.fields
    return StoredTable(tuple((f.name, f.dataType.simpleString()) for f in fields),
                       tuple(java_table.schema().identifierFieldNames()),
                       _partition_ddl(java_table))


def evolution_sql(ident: str, evolution: Evolution) -> list[str]:
    """The ALTER TABLE statements of ``evolution`` on the table itself."""
    statements = [sql for change in evolution.columns for sql in action_sql(ident, change)]
    table = quote_qualified(ident)
    statements += [f"ALTER TABLE {table} DROP PARTITION FIELD {p}"
                   for p in evolution.drop_partitions]
    statements += [f"ALTER TABLE {table} ADD PARTITION FIELD {p}"
                   for p in evolution.add_partitions]
    return statements


def changelog_sql(changelog: str, images: dict[str, dict[str, str]],
                  top: dict[str, str], columns: Sequence[tuple[str, str]],
                  keys: Sequence[str]) -> list[str]:
    """What makes the changelog's ``before``/``after`` structs (``images``: image → its
    fields, lower-cased name → type) and key columns (``top``) hold ``columns``."""
    statements: list[str] = []
    for image, fields in sorted(images.items()):
        for change in _missing(fields, columns):
            statements += action_sql(changelog, change, prefix=f"{image}.")
    key_columns = [(n, t) for n, t in columns if n.lower() in {k.lower() for k in keys}]
    for change in _missing(top, key_columns):
        if isinstance(change, WidenColumn):
            statements += action_sql(changelog, change)
    return statements


def _missing(fields: dict[str, str], columns: Sequence[tuple[str, str]]) -> list[ColumnChange]:
    out: list[ColumnChange] = []
    for name, wanted in columns:
        old, new = fields.get(name.lower()), normalize_type(wanted)
        if old is None:
            out.append(AddColumn(name, new))
        elif normalize_type(old) != new and is_widening(normalize_type(old), new):
            out.append(WidenColumn(name, normalize_type(old), new))
    return out


def apply_evolution(spark: SparkSession, ident: str, evolution: Evolution) -> None:
    """Run :func:`evolution_sql`: each statement is one Iceberg metadata commit; after a
    crash half-way, the next :func:`plan_evolution` finds what is left."""
    for statement in evolution_sql(ident, evolution):
        spark.sql(statement)
    if not evolution.empty:
        log.info("table %s evolved: %s", ident, "; ".join(evolution.describe()))


def evolve_changelog(spark: SparkSession, changelog: str, columns: Sequence[tuple[str, str]],
                     keys: Sequence[str]) -> None:
    """Make the existing changelog's images (and key columns) hold the table's ``columns``:
    compared with the changelog itself, so it catches up even after a crash between the
    table's ALTER and its own."""
    images: dict[str, dict[str, str]] = {}
    top: dict[str, str] = {}
    for field in spark.table(changelog).schema.fields:
        if field.name in ("before", "after"):
            images[field.name] = {f.name.lower(): f.dataType.simpleString()
                                  for f in field.dataType.fields}  # type: ignore[attr-defined]
        else:
            top[field.name.lower()] = field.dataType.simpleString()
    for statement in changelog_sql(changelog, images, top, columns, keys):
        spark.sql(statement)
