"""The changelog of a primary-key table: a companion append-only table (pure SQL).

A primary-key table declared with ``changelog=True`` gets ``<table>__changelog``, one
row per change (all columns optional)::

    <key columns>   the row's primary key
    before          STRUCT of all table columns: the stored row before the change
    after           STRUCT of all table columns: the row after the change
    _op             +I (before NULL) | -U, +U (a pair, both images set) | -D (after NULL)
    _seq            BIGINT, strictly increasing within the changelog table
    _source_pos     the batch's end position (JSON text), as in the commit marker
    _commit_ts      TIMESTAMP the rows were computed at

:func:`changelog_sql` computes a batch's rows from its collapsed rows and the target as
it is *before* the MERGE, numbered from :func:`changelog_seq_base`; they are appended,
with the batch's marker, before the MERGE commits. Why a table of icetide's own, how the
rows are computed, and the commit order that keeps the two exactly once: docs/semantics.md
("A primary-key table's changelog").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from icetide.errors import TableError, listed
from icetide.tables.ddl import APPEND_TABLE_PROPERTIES
from icetide.tables.merge_sql import (
    EngineLike,
    MergeActions,
    MergeSpec,
    compile_merge,
    row_image,
    same_images,
)
from icetide.tables.sql import (
    join_qualified,
    quote_ident,
    quote_qualified,
    quote_table,
    split_qualified,
    sql_and,
    sql_string,
)

CHANGELOG_SUFFIX = "__changelog"
BEFORE = "before"
AFTER = "after"
OP = "_op"
SEQ = "_seq"
SOURCE_POS = "_source_pos"
COMMIT_TS = "_commit_ts"
META_COLUMNS = (BEFORE, AFTER, OP, SEQ, SOURCE_POS, COMMIT_TS)
CHANGELOG_PARTITIONING = ("days(_commit_ts)",)
_POS = "__icetide_pos"

q = quote_ident


def changelog_table_name(table: str) -> str:
    """``db.orders`` → ``db.orders__changelog`` (odd parts stay backtick-quoted)."""
    parts = split_qualified(table)
    return join_qualified((*parts[:-1], parts[-1] + CHANGELOG_SUFFIX))


def changelog_seq_base(last_sequence_number: int) -> int:
    """``seq_base`` for the next changelog commit: ``(last_sequence_number + 1) << 32``.

    ``last_sequence_number`` is the changelog table's current last sequence number
    (0 for a new table). A batch may hold up to 2**32 - 1 changes.
    """
    if not isinstance(last_sequence_number, int) or last_sequence_number < 0:
        raise TableError(
            f"last_sequence_number={last_sequence_number!r} must be an int >= 0: read it from "
            "the changelog table's metadata (0 for a new table)"
        )
    return (last_sequence_number + 1) << 32


def _check_types(keys: Sequence[str], column_types: Mapping[str, str]) -> None:
    clash = [k for k in keys if k in META_COLUMNS]
    if clash:
        raise TableError(
            f"key column(s) {listed(clash)} clash with the changelog columns "
            f"{listed(META_COLUMNS)}: "
            "rename the key or disable changelog=True"
        )
    missing = [k for k in keys if k not in column_types]
    bad = [c for c, t in column_types.items() if not isinstance(t, str) or not t.strip()]
    if missing or bad or not keys:
        raise TableError(
            f"changelog needs a Spark SQL type for every column and at least one key: keys "
            f"{listed(keys)} missing from column_types: {listed(missing)}, empty types for: "
            f"{listed(bad)}; pass "
            "e.g. {'id': 'bigint', 'name': 'string'} (DataType.simpleString())"
        )


def _struct_type(column_types: Mapping[str, str]) -> str:
    return "STRUCT<" + ", ".join(f"{q(c)}: {t}" for c, t in column_types.items()) + ">"


def changelog_columns(
    keys: Sequence[str], column_types: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The changelog table's ``(name, type)`` columns for a table's keys and column types."""
    _check_types(keys, column_types)
    image = _struct_type(column_types)
    return [
        *((k, column_types[k]) for k in keys),
        (BEFORE, image), (AFTER, image), (OP, "STRING"), (SEQ, "BIGINT"),
        (SOURCE_POS, "STRING"), (COMMIT_TS, "TIMESTAMP"),
    ]


def changelog_ddl(
    catalog: str | None,
    table: str,
    keys: Sequence[str],
    column_types: Mapping[str, str],
    *,
    properties: Mapping[str, str] | None = None,
) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the changelog of ``table`` (``db.table``).

    Append-only, format v2, partitioned by ``days(_commit_ts)`` so retention can drop
    old days; ``properties`` are added to the append-table defaults.
    """
    cols = ",\n  ".join(f"{q(n)} {t}" for n, t in changelog_columns(keys, column_types))
    props = {**APPEND_TABLE_PROPERTIES, **(properties or {})}
    tblprops = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in sorted(props.items()))
    return (
        f"CREATE TABLE IF NOT EXISTS {quote_table(catalog, changelog_table_name(table))} (\n"
        f"  {cols}\n) USING iceberg\nPARTITIONED BY (days({q(COMMIT_TS)}))\n"
        f"TBLPROPERTIES ({tblprops})"
    )


def _after_case(spec: MergeSpec, actions: MergeActions, types: Mapping[str, str]) -> str:
    """The row the MERGE leaves for ``s``: its clauses in MERGE order, as one CASE."""
    absent = f"t.{q(spec.keys[0])} IS NULL"
    stored = {c: f"t.{q(c)}" for c in spec.columns}
    branches: list[tuple[str, str]] = []
    if actions.insert_when is not None:
        inserted = row_image(types, {c: f"s.{q(c)}" for c in spec.columns})
        branches.append((sql_and(absent, actions.insert_when), inserted))
    branches.append((absent, "NULL"))
    if actions.delete_when is not None:
        branches.append((actions.delete_when, "NULL"))
    if actions.update_when is not None and actions.assignments:
        updated = row_image(types, {**stored, **dict(actions.assignments)})
        branches.append((actions.update_when, updated))
    whens = "\n    ".join(f"WHEN {cond} THEN {value}" for cond, value in branches)
    return f"CASE\n    {whens}\n    ELSE {row_image(types, stored)}\n  END"


def _same(column_types: Mapping[str, str]) -> str:
    """``before`` and ``after`` are the same row."""
    return same_images(q(BEFORE), q(AFTER), column_types)


def _ops_array(column_types: Mapping[str, str]) -> str:
    b, a = q(BEFORE), q(AFTER)
    return (
        f"CASE WHEN {b} IS NULL AND {a} IS NOT NULL THEN array('+I') "
        f"WHEN {b} IS NOT NULL AND {a} IS NULL THEN array('-D') "
        f"WHEN {b} IS NOT NULL AND NOT ({_same(column_types)}) THEN array('-U', '+U') "
        "ELSE CAST(array() AS ARRAY<STRING>) END"
    )


def _opaque_bigint(value: int, anchor: str) -> str:
    """``value + anchor`` as a BIGINT whose constant part stays out of Spark's generated
    Java code. A BIGINT or TIMESTAMP literal (also one folded from ``CAST``, or
    ``current_timestamp()``) is written into the source of the stage's class, so a value
    that changes every batch made Spark compile that stage anew — Janino, then the JIT —
    on every batch. A DECIMAL literal is passed by reference instead, and ``anchor`` (a
    per-row expression) keeps the sum from being folded back into one BIGINT literal."""
    return f"CAST(CAST('{int(value)}' AS DECIMAL(20,0)) + {anchor} AS BIGINT)"


def _ts_sql(commit_ts: dt.datetime | None, anchor: str) -> str:
    """The commit time (default: now), as a timestamp kept out of the generated code."""
    if commit_ts is None:
        commit_ts = dt.datetime.now(dt.UTC)
    if not isinstance(commit_ts, dt.datetime) or commit_ts.tzinfo is None:
        raise TableError(
            f"commit_ts={commit_ts!r} must be a timezone-aware datetime, e.g. "
            "datetime.now(timezone.utc), or None for now"
        )
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    micros = (commit_ts - epoch) // dt.timedelta(microseconds=1)
    return f"timestamp_micros({_opaque_bigint(micros, f'0 * {anchor}')})"


def _ordered_types(
    spec: MergeSpec, column_types: Mapping[str, str], seq_base: int
) -> dict[str, str]:
    if set(column_types) != set(spec.columns):
        raise TableError(
            f"column_types {listed(column_types)} must name exactly the MERGE columns "
            f"{listed(spec.columns)}: build both from the target table's schema"
        )
    if not isinstance(seq_base, int) or seq_base < 0:
        raise TableError(f"seq_base={seq_base!r} must be an int >= 0: use changelog_seq_base()")
    types = {c: column_types[c] for c in spec.columns}
    _check_types(spec.keys, types)
    return types


def changelog_sql(
    engine: EngineLike,
    spec: MergeSpec,
    column_types: Mapping[str, str],
    *,
    seq_base: int,
    source_pos: str,
    commit_ts: dt.datetime | None = None,
    collapsed_view: str | None = None,
    key_filter: str | None = None,
) -> str:
    """The SELECT of the changelog rows a MERGE of ``spec`` with ``engine`` will cause.

    Run it before the MERGE, against the same target state and the same collapsed rows
    (pass ``collapsed_view``, as for :func:`~icetide.tables.merge_sql.merge_sql`).
    ``column_types`` maps every table column to its Spark SQL type (table order);
    ``seq_base`` comes from :func:`changelog_seq_base`. ``key_filter`` (see
    :mod:`icetide.lake.key_filter`) prunes the target scan of the join, as in the MERGE.
    """
    types = _ordered_types(spec, column_types, seq_base)
    keys = ", ".join(q(k) for k in spec.keys)
    number = f"row_number() OVER (ORDER BY {keys}, {_POS})"
    return (
        f"SELECT {keys}, {q(BEFORE)}, {q(AFTER)}, {q(OP)},\n"
        f"  {_opaque_bigint(seq_base, number)} AS {q(SEQ)},\n"
        f"  {sql_string(source_pos)} AS {q(SOURCE_POS)},\n"
        f"  {_ts_sql(commit_ts, number)} AS {q(COMMIT_TS)}\n"
        f"FROM (\n{images_sql(engine, spec, types, collapsed_view, key_filter)}\n"
        ") AS __icetide_c\n"
        f"LATERAL VIEW posexplode({_ops_array(types)}) __icetide_x AS {_POS}, {q(OP)}"
    )


def change_counts_sql(
    engine: EngineLike,
    spec: MergeSpec,
    column_types: Mapping[str, str],
    *,
    collapsed_view: str | None = None,
    key_filter: str | None = None,
    as_of: int | None = None,
) -> str:
    """One row ``inserted, updated, deleted``: what a MERGE of ``spec`` will do.

    The same join as :func:`changelog_sql` (run it before the MERGE, against the same
    target state and collapsed rows), counted instead of listed; a key whose row the
    MERGE leaves unchanged counts nowhere. ``as_of`` (a snapshot id) joins the target as
    of that snapshot instead: after the MERGE, its parent snapshot gives what it did.
    """
    types = _ordered_types(spec, column_types, 0)
    counts = ",\n  ".join(f"{expr} AS {name}" for name, expr in change_counts(types).items())
    return (
        f"SELECT {counts}\n"
        f"FROM (\n{images_sql(engine, spec, types, collapsed_view, key_filter, as_of)}\n"
        ") AS __icetide_c"
    )


def change_counts(column_types: Mapping[str, str]) -> dict[str, str]:
    """``inserted``, ``updated``, ``deleted``: the SQL counting each over the rows of
    :func:`images_sql` (a key the MERGE leaves unchanged counts nowhere)."""
    b, a = q(BEFORE), q(AFTER)
    return {"inserted": f"count_if({b} IS NULL AND {a} IS NOT NULL)",
            "updated": f"count_if({b} IS NOT NULL AND {a} IS NOT NULL "
                       f"AND NOT ({_same(column_types)}))",
            "deleted": f"count_if({b} IS NOT NULL AND {a} IS NULL)"}


def version_suffix(as_of: int | None) -> str:
    """The name suffix that reads an Iceberg table as of snapshot ``as_of`` ("" for now)."""
    if as_of is None:
        return ""
    if not isinstance(as_of, int) or isinstance(as_of, bool):
        raise TableError(f"as_of={as_of!r} must be a snapshot id (an int)")
    # Iceberg's snapshot selector in the name, not ``VERSION AS OF``: a session with
    # Hudi's SQL extension parses that clause into Hudi's own time travel, which cannot
    # resolve an Iceberg table
    return f".`snapshot_id_{as_of}`"


def images_sql(engine: EngineLike, spec: MergeSpec, types: Mapping[str, str],
               collapsed_view: str | None, key_filter: str | None,
               as_of: int | None = None) -> str:
    """Per collapsed key: its key columns, ``before`` (stored row, as of snapshot
    ``as_of`` if given) and ``after`` (row the MERGE leaves)."""
    actions = compile_merge(engine, spec)
    using = quote_qualified(collapsed_view) if collapsed_view else f"(\n{actions.collapse_sql}\n)"
    on = sql_and(*[f"t.{q(k)} = s.{q(k)}" for k in spec.keys], key_filter)
    stored = row_image(types, {c: f"t.{q(c)}" for c in spec.columns})
    return (
        f"  SELECT {', '.join(f's.{q(k)} AS {q(k)}' for k in spec.keys)},\n"
        f"  CASE WHEN t.{q(spec.keys[0])} IS NOT NULL THEN {stored} END AS {q(BEFORE)},\n"
        f"  {_after_case(spec, actions, types)} AS {q(AFTER)}\n"
        f"  FROM {using} AS s\n  LEFT JOIN {spec.target}{version_suffix(as_of)} AS t ON {on}"
    )
