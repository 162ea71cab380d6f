"""Merge engines compiled to Spark SQL: collapse the batch per key, then MERGE (pure).

For an engine (:mod:`icetide.tables.merge_engines`) and a :class:`MergeSpec` this
module generates two statements:

1. the *collapse* SELECT, which turns the batch view into at most one row per key
   with the engine's semantics (deduplicate/first-row: ``row_number()`` over the key by
   ``(sequence, ordinal)``; partial-update: per-column last non-null, per sequence group;
   aggregation: per-column aggregate), so MERGE never sees two source rows for a key;
2. the MERGE of that result into the target, whose conditions apply the engine across
   batches (sequence comparisons, ``coalesce`` for partial updates, ``t + s`` for sums).

Nothing assumes the target is empty or that a key is new: every statement is written
against whatever the target holds. Replays are prevented by the flow loop, which
commits the batch's end position with the MERGE. Every identifier is quoted.

:class:`MergeActions` is the shared intermediate form: the changelog SQL
(:mod:`icetide.tables.changelog`) renders the same conditions and expressions, so the
changelog and the table cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icetide.errors import PipelineError, listed
from icetide.tables.merge_engines import (
    ADD_OPS,
    OPS,
    ORDERED_FUNCTIONS,
    RETRACT_OPS,
    Aggregation,
    Deduplicate,
    FirstRow,
    MergeEngine,
    PartialUpdate,
    parse_merge_engine,
)
from icetide.tables.merge_fold_sql import (
    DEL,
    agg_batch,
    agg_merge,
    filter_sql,
    group_batch,
    group_merge,
    struct_sql,
)
from icetide.tables.sql import quote_ident as q
from icetide.tables.sql import quote_qualified, raise_error_sql, sql_and, sql_string

EngineLike = MergeEngine | str | Mapping[str, object]


INTERNAL_PREFIX = "__icetide_"
RESET = "__icetide_reset"  # a retraction happened inside the batch (partial-update remove)
DEL_SEQ = "__icetide_del_seq"  # sequence of the batch's last retraction
ORD = "__icetide_ord"  # the source's ordinal column
#: In a replacing MERGE (``MergeSpec.replacing``): the row replaces the stored one
#: (a recomputed group), and the key is deleted (its group is gone).
REPL = "__icetide_repl"
GONE = "__icetide_gone"
_DELETE_HINT = {
    "deduplicate": "'remove' or 'ignore'", "partial-update": "'ignore' or 'remove'",
    "aggregation": "'ignore' or 'retract'", "first-row": "'ignore'",
}


@dataclass(frozen=True)
class MergeSpec:
    """The table, the batch view and the column roles a MERGE is generated for.

    ``target`` is already quoted (:func:`icetide.tables.sql.quote_table`); ``source`` is
    the name of the temp view holding the batch (quoted here). ``columns`` are all
    target columns in table order, keys included; the source must have them by name.
    ``op_column`` (not stored) holds ``+I/+U/-U/-D``; without it every row is an upsert.
    ``ordinal_column`` gives arrival order inside the batch (may be a stored column).
    Key columns must be non-null (declare them NOT NULL / identifier fields).
    """

    target: str
    source: str
    keys: Sequence[str]
    columns: Sequence[str]
    op_column: str | None = None
    ordinal_column: str | None = None
    #: The collapsed source also carries :data:`REPL` and :data:`GONE` (booleans): rows
    #: recomputed from their inputs replace the stored row or delete the key, whatever
    #: the engine; the other rows merge with the engine as usual.
    replacing: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "columns", tuple(self.columns))
        problem = _spec_problem(self)
        if problem:
            raise PipelineError(f"MERGE into {self.target or '?'}: {problem}")

    @property
    def value_columns(self) -> tuple[str, ...]:
        """The non-key columns, in table order."""
        return tuple(c for c in self.columns if c not in self.keys)


def _spec_problem(spec: MergeSpec) -> str | None:
    cols = spec.columns
    if not spec.target or not spec.source:
        return "target and source must be non-empty"
    if not spec.keys:
        return "no primary key columns: pass keys=[...] (e.g. ['user_id'])"
    if len(set(cols)) != len(cols) or len(set(spec.keys)) != len(spec.keys):
        return f"duplicate names in columns {listed(cols)} or keys {listed(spec.keys)}"
    missing = [k for k in spec.keys if k not in cols]
    if missing:
        return f"key column(s) {listed(missing)} are not among the columns {listed(cols)}"
    reserved = [c for c in cols if not isinstance(c, str) or c.startswith(INTERNAL_PREFIX)]
    if reserved:
        return f"column name(s) {reserved} are reserved (prefix {INTERNAL_PREFIX!r}): rename them"
    if spec.op_column is not None and spec.op_column in cols:
        return f"op_column {spec.op_column!r} must not be a table column: it is not stored"
    if spec.op_column is not None and spec.op_column == spec.ordinal_column:
        return f"op_column and ordinal_column are both {spec.op_column!r}"
    return None


@dataclass(frozen=True)
class MergeActions:
    """What a MERGE does, shared by the MERGE text and the changelog SQL.

    Conditions and expressions are SQL over ``s`` (the collapsed batch row) and ``t``
    (the stored row); ``"TRUE"`` is unconditional and ``None`` means no such clause.
    ``assignments`` cover every non-key column in table order.
    """

    collapse_sql: str
    delete_when: str | None
    update_when: str | None
    assignments: tuple[tuple[str, str], ...]
    insert_when: str | None


def _column_problem(engine: MergeEngine, spec: MergeSpec) -> str | None:
    values = spec.value_columns
    named: list[tuple[str, str]] = []
    if not isinstance(engine, Aggregation) and engine.sequence_field is not None:
        named.append(("sequence_field", engine.sequence_field))
    if isinstance(engine, PartialUpdate):
        for seq, members in engine.sequence_groups.items():
            named.append(("sequence group field", seq))
            named += [(f"group {seq!r} column", m) for m in members]
    if isinstance(engine, Aggregation):
        named += [("aggregated column", c) for c in engine.functions]
        named += [(f"group {seq!r} column", m)
                  for seq, members in engine.sequence_groups.items() for m in members]
    for what, col in named:
        if col not in values:
            return f"{what} {col!r} is not a non-key column; non-key columns are {listed(values)}"
    if _needs_order(engine, spec) and not _order(engine, spec):
        return (
            f"the {engine.name} merge engine must order the rows of a key, but it has no "
            "sequence_field and the spec no ordinal_column: pass ordinal_column= (e.g. the "
            "Kafka offset or binlog position column)"
        )
    return None


def _needs_order(engine: MergeEngine, spec: MergeSpec) -> bool:
    if isinstance(engine, Aggregation):  # a sequence group is ordered by its own field
        return any(engine.function_of(c) in ORDERED_FUNCTIONS for c in spec.value_columns
                   if engine.group_of(c) is None)
    return True


def _order(engine: MergeEngine, spec: MergeSpec) -> list[str]:
    seq = None if isinstance(engine, Aggregation) else engine.sequence_field
    return ([q(seq)] if seq else []) + ([ORD] if spec.ordinal_column else [])


def _newer(src: str, tgt: str) -> str:
    """``src`` is at least as new as ``tgt``; NULL sequences are the oldest."""
    return f"coalesce({src} >= {tgt}, {tgt} IS NULL)"


def _keys(spec: MergeSpec, alias: str = "") -> str:
    return ", ".join(alias + q(k) for k in spec.keys)


def _del_expr(engine: MergeEngine, spec: MergeSpec) -> str:
    op_name = spec.op_column or ""
    op = q(op_name)
    retract = "TRUE"
    if engine.on_delete == "error":
        retract = raise_error_sql(
            sql_string(f"icetide: the {engine.name} merge engine of {spec.target} rejects "
                       f"retractions but {op_name} is "), op,
            sql_string(f"; set on_delete={_DELETE_HINT[engine.name]} to accept them"),
        )
    bad = raise_error_sql(
        sql_string(f"icetide: {op_name} of {spec.source} must be {', '.join(OPS)} but is "),
        f"coalesce({op}, 'NULL')", sql_string(f" (merging into {spec.target})"),
    )
    adds, retracts = (", ".join(sql_string(o) for o in ops) for ops in (ADD_OPS, RETRACT_OPS))
    return (f"CASE WHEN {op} IN ({adds}) THEN FALSE WHEN {op} IN ({retracts}) "
            f"THEN {retract} ELSE {bad} END")


def _base_sql(engine: MergeEngine, spec: MergeSpec) -> str:
    cols = [q(c) for c in spec.columns]
    if spec.ordinal_column:
        cols.append(f"{q(spec.ordinal_column)} AS {ORD}")
    if spec.op_column:
        cols.append(f"{_del_expr(engine, spec)} AS {DEL}")
    sql = f"SELECT {', '.join(cols)} FROM {quote_qualified(spec.source)}"
    if not spec.op_column:
        return sql
    # The filter also forces the op check to run on every row (a pruned column would not).
    keep = f"{DEL} IS NOT NULL" if _keeps_retractions(engine, spec) else f"NOT {DEL}"
    return f"SELECT * FROM ({sql}) AS __icetide_a WHERE {keep}"


def _keeps_retractions(engine: MergeEngine, spec: MergeSpec) -> bool:
    return spec.op_column is not None and engine.on_delete in ("remove", "retract")


def _pick_row(engine: MergeEngine, spec: MergeSpec, *, last: bool) -> str:
    direction = "DESC NULLS LAST" if last else "ASC NULLS FIRST"
    order_by = ", ".join(f"{o} {direction}" for o in _order(engine, spec))
    out = [q(c) for c in spec.columns] + ([DEL] if _keeps_retractions(engine, spec) else [])
    return (
        f"SELECT {', '.join(out)} FROM (\n"
        f"  SELECT *, row_number() OVER (PARTITION BY {_keys(spec)} ORDER BY {order_by})"
        " AS __icetide_rn\n"
        f"  FROM ({_base_sql(engine, spec)}) AS __icetide_b\n"
        ") AS __icetide_r WHERE __icetide_rn = 1"
    )


def _deduplicate(engine: Deduplicate, spec: MergeSpec) -> MergeActions:
    keep = _keeps_retractions(engine, spec)
    seq = engine.sequence_field
    newer = _newer(f"s.{q(seq)}", f"t.{q(seq)}") if seq else None
    live = f"NOT s.{DEL}" if keep else None
    assignments = tuple((c, f"s.{q(c)}") for c in spec.value_columns)
    return MergeActions(
        collapse_sql=_pick_row(engine, spec, last=True),
        delete_when=sql_and(f"s.{DEL}", newer) if keep else None,
        update_when=sql_and(live, newer) if assignments else None,
        assignments=assignments,
        insert_when=sql_and(live),
    )


def _first_row(engine: FirstRow, spec: MergeSpec) -> MergeActions:
    return MergeActions(_pick_row(engine, spec, last=False), None, None, (), "TRUE")


def _partial_batch(engine: PartialUpdate, spec: MergeSpec, col: str, alive: str | None) -> str:
    c = q(col)
    if col == engine.sequence_field or col in engine.sequence_groups:
        return f"max({c}){filter_sql(alive)}"
    group = engine.group_of(col)
    if group is not None:
        order = struct_sql([q(group)] + ([ORD] if spec.ordinal_column else []))
        return f"max_by({c}, {order}){filter_sql(alive, f'{q(group)} IS NOT NULL')}"
    return f"max_by({c}, {struct_sql(_order(engine, spec))}){filter_sql(alive, f'{c} IS NOT NULL')}"


def _partial_collapse(engine: PartialUpdate, spec: MergeSpec) -> str:
    remove = _keeps_retractions(engine, spec)
    alive = "__icetide_alive" if remove else None
    order = struct_sql(_order(engine, spec))
    items = [q(k) for k in spec.keys]
    items += [f"{_partial_batch(engine, spec, c, alive)} AS {q(c)}" for c in spec.value_columns]
    source = f"({_base_sql(engine, spec)}) AS __icetide_b"
    if remove:
        items += [f"max_by({DEL}, {order}) AS {DEL}", f"bool_or({DEL}) AS {RESET}"]
        if engine.sequence_field:
            items.append(f"max_by({q(engine.sequence_field)}, {order}) FILTER (WHERE {DEL})"
                         f" AS {DEL_SEQ}")
        source = (
            f"(SELECT *, (__icetide_last_del IS NULL OR {order} > __icetide_last_del)"
            " AS __icetide_alive FROM (\n"
            f"  SELECT *, max(CASE WHEN {DEL} THEN {order} END) OVER (PARTITION BY "
            f"{_keys(spec)}) AS __icetide_last_del\n  FROM {source}) AS __icetide_w"
            ") AS __icetide_l"
        )
    return f"SELECT {', '.join(items)}\nFROM {source}\nGROUP BY {_keys(spec)}"


def _partial_assign(engine: PartialUpdate, col: str, newer: str | None) -> str:
    s, t = f"s.{q(col)}", f"t.{q(col)}"
    if col == engine.sequence_field:
        return f"greatest({s}, {t})"
    group = col if col in engine.sequence_groups else engine.group_of(col)
    if group is not None:
        gs, gt = f"s.{q(group)}", f"t.{q(group)}"
        return f"CASE WHEN {gs} IS NOT NULL AND {_newer(gs, gt)} THEN {s} ELSE {t} END"
    if newer is None:
        return f"coalesce({s}, {t})"
    return f"CASE WHEN {newer} THEN coalesce({s}, {t}) ELSE coalesce({t}, {s}) END"


def _partial_update(engine: PartialUpdate, spec: MergeSpec) -> MergeActions:
    remove = _keeps_retractions(engine, spec)
    seq = engine.sequence_field
    newer = _newer(f"s.{q(seq)}", f"t.{q(seq)}") if seq else None
    del_newer = _newer(f"s.{DEL_SEQ}", f"t.{q(seq)}") if seq and remove else None
    assignments = []
    for col in spec.value_columns:
        expr = _partial_assign(engine, col, newer)
        if remove:
            expr = f"CASE WHEN {sql_and(f's.{RESET}', del_newer)} THEN s.{q(col)} ELSE {expr} END"
        assignments.append((col, expr))
    live = f"NOT s.{DEL}" if remove else "TRUE"
    delete_when = sql_and(f"s.{DEL}", del_newer) if remove else None
    insert_when = live
    if engine.remove_empty:  # a row left without any value is deleted, never inserted
        content = [c for c in spec.value_columns
                   if c != engine.sequence_field and c not in engine.sequence_groups]
        assigned = dict(assignments)
        empty = sql_and(*[f"({assigned[c]}) IS NULL" for c in content])
        delete_when = empty if delete_when is None else f"({delete_when}) OR ({empty})"
        insert_when = sql_and(live, f"NOT ({sql_and(*[f's.{q(c)} IS NULL' for c in content])})")
    return MergeActions(
        collapse_sql=_partial_collapse(engine, spec),
        delete_when=delete_when,
        update_when=live if assignments else None,
        assignments=tuple(assignments),
        insert_when=insert_when,
    )


def _aggregation(engine: Aggregation, spec: MergeSpec) -> MergeActions:
    retract = _keeps_retractions(engine, spec)
    order = struct_sql(_order(engine, spec)) if spec.ordinal_column else "NULL"

    def batch(c: str) -> str:
        seq = engine.group_of(c)
        if seq is not None:
            return group_batch(seq, c, order, retract)
        return agg_batch(engine.function_of(c), c, order, retract)

    def merge(c: str) -> str:
        seq = engine.group_of(c)
        return group_merge(seq, c) if seq is not None else agg_merge(engine.function_of(c), c)

    items = [q(k) for k in spec.keys] + [f"{batch(c)} AS {q(c)}" for c in spec.value_columns]
    collapse = (f"SELECT {', '.join(items)}\nFROM ({_base_sql(engine, spec)}) AS __icetide_b\n"
                f"GROUP BY {_keys(spec)}")
    assignments = tuple((c, merge(c)) for c in spec.value_columns)
    return MergeActions(collapse, None, "TRUE" if assignments else None, assignments, "TRUE")


def compile_merge(engine: EngineLike, spec: MergeSpec) -> MergeActions:
    """The collapse SELECT and the MERGE clauses of ``engine`` for ``spec``."""
    eng = parse_merge_engine(engine)
    problem = _column_problem(eng, spec)
    if problem:
        raise PipelineError(f"MERGE into {spec.target} with the {eng.name} engine: {problem}")
    if isinstance(eng, Deduplicate):
        actions = _deduplicate(eng, spec)
    elif isinstance(eng, PartialUpdate):
        actions = _partial_update(eng, spec)
    elif isinstance(eng, Aggregation):
        actions = _aggregation(eng, spec)
    else:
        actions = _first_row(eng, spec)
    return _replacing(actions, spec) if spec.replacing else actions


def _replacing(actions: MergeActions, spec: MergeSpec) -> MergeActions:
    """``actions`` for the usual rows; recomputed rows (:data:`REPL`) replace the stored
    row or insert it, and :data:`GONE` rows delete their key."""
    repl, gone = f"s.{REPL}", f"s.{GONE}"
    usual, kept = f"NOT {repl}", f"({repl} AND NOT {gone})"

    def either(own: str | None) -> str:
        return kept if own is None else f"({kept} OR ({usual} AND ({own})))"

    stored = dict(actions.assignments)
    assignments = tuple(
        (c, f"CASE WHEN {repl} THEN s.{q(c)} ELSE {stored.get(c, f't.{q(c)}')} END")
        for c in spec.value_columns)
    delete = gone if actions.delete_when is None else (
        f"({gone} OR ({usual} AND ({actions.delete_when})))")
    return MergeActions(actions.collapse_sql, delete, either(actions.update_when),
                        assignments, either(actions.insert_when))


def _when(condition: str) -> str:
    return "" if condition == "TRUE" else f" AND {condition}"


def row_image(column_types: Mapping[str, str], exprs: Mapping[str, str]) -> str:
    """A row as ``named_struct`` of ``exprs`` (column → SQL) cast to ``column_types``, in
    their order: two images compare with ``<=>`` (see :func:`same_images`)."""
    fields = ", ".join(
        f"{sql_string(c)}, CAST({exprs[c]} AS {t})" for c, t in column_types.items()
    )
    return f"named_struct({fields})"


def same_images(a: str, b: str, column_types: Mapping[str, str]) -> str:
    """``a`` and ``b`` (row images) are the same row (maps compare as JSON: Spark cannot)."""
    if any("map<" in t.lower().replace(" ", "") for t in column_types.values()):
        return f"to_json({a}) <=> to_json({b})"
    return f"{a} <=> {b}"


def _changes_row(actions: MergeActions, column_types: Mapping[str, str]) -> str:
    """The update leaves the stored row different: an update that would rewrite a row as
    it is is no change (no delete file, no new row, no changelog entry)."""
    assigned = {c: column_types[c] for c, _ in actions.assignments}
    stored = row_image(assigned, {c: f"t.{q(c)}" for c in assigned})
    updated = row_image(assigned, dict(actions.assignments))
    return f"NOT ({same_images(stored, updated, assigned)})"


def render_merge(spec: MergeSpec, actions: MergeActions, using: str,
                 key_filter: str | None = None,
                 column_types: Mapping[str, str] | None = None) -> str:
    """The MERGE statement of ``actions``; ``using`` is a quoted view or ``(SELECT ...)``.

    ``key_filter`` (a predicate on ``t``'s keys that every matching target row satisfies,
    see :mod:`icetide.lake.key_filter`) is added to ``ON`` so the target scan is pruned.
    With ``column_types`` (the target's, per column), a matched row the update would leave
    as it is is not rewritten.
    """
    on = sql_and(*[f"t.{q(k)} = s.{q(k)}" for k in spec.keys], key_filter)
    lines = [f"MERGE INTO {spec.target} AS t", f"USING {using} AS s", f"ON {on}"]
    if actions.delete_when is not None:
        lines.append(f"WHEN MATCHED{_when(actions.delete_when)} THEN DELETE")
    if actions.update_when is not None and actions.assignments:
        sets = ",\n  ".join(f"{q(c)} = {expr}" for c, expr in actions.assignments)
        when = actions.update_when
        if column_types is not None:
            when = sql_and(when, _changes_row(actions, column_types))
        lines.append(f"WHEN MATCHED{_when(when)} THEN UPDATE SET\n  {sets}")
    if actions.insert_when is not None:
        cols = ", ".join(q(c) for c in spec.columns)
        vals = ", ".join(f"s.{q(c)}" for c in spec.columns)
        lines.append(f"WHEN NOT MATCHED{_when(actions.insert_when)} THEN INSERT ({cols}) "
                     f"VALUES ({vals})")
    return "\n".join(lines)


def collapse_sql(engine: EngineLike, spec: MergeSpec) -> str:
    """The SELECT that collapses the batch view to at most one row per key."""
    return compile_merge(engine, spec).collapse_sql


def merge_sql(
    engine: EngineLike,
    spec: MergeSpec,
    *,
    collapsed_view: str | None = None,
    key_filter: str | None = None,
    column_types: Mapping[str, str] | None = None,
) -> str:
    """The full MERGE for ``engine``.

    By default the collapse SELECT is embedded; pass ``collapsed_view`` (a temp view of
    :func:`collapse_sql`'s result, e.g. cached) to merge from it instead — the flow loop
    does so when it also writes the changelog, so both read the same collapsed rows.
    ``key_filter`` and ``column_types``: see :func:`render_merge`.
    """
    actions = compile_merge(engine, spec)
    using = quote_qualified(collapsed_view) if collapsed_view else f"(\n{actions.collapse_sql}\n)"
    return render_merge(spec, actions, using, key_filter, column_types)
