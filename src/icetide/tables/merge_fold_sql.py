"""SQL of one column's fold in an aggregation MERGE: within a batch (the collapse) and
across batches (the assignment), per aggregate function and sequence group (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from icetide.tables.sql import quote_ident as q
from icetide.tables.sql import sql_and

DEL = "__icetide_del"  # the collapsed row of a key is a retraction


def filter_sql(*conditions: str | None) -> str:
    cond = sql_and(*conditions)
    return "" if cond == "TRUE" else f" FILTER (WHERE {cond})"


def struct_sql(fields: Sequence[str]) -> str:
    return f"struct({', '.join(fields)})"


def agg_batch(fn: str, col: str, order: str, retract: bool) -> str:
    c = q(col)
    if fn == "sum":
        return f"sum(CASE WHEN {DEL} THEN -{c} ELSE {c} END)" if retract else f"sum({c})"
    if fn == "count":
        if retract:
            return f"sum(CASE WHEN {c} IS NULL THEN 0 WHEN {DEL} THEN -1 ELSE 1 END)"
        return f"count({c})"
    if fn in ("min", "max", "bool_and", "bool_or"):
        return f"{fn}({c})"
    by = "max_by" if fn.startswith("last") else "min_by"
    non_null = f"{c} IS NOT NULL" if fn.endswith("non_null") else None
    return f"{by}({c}, {order}){filter_sql(non_null, f'NOT {DEL}' if retract else None)}"


def agg_merge(fn: str, col: str) -> str:
    s, t = f"s.{q(col)}", f"t.{q(col)}"
    combine = {"sum": "+", "bool_and": "AND", "bool_or": "OR"}
    if fn in combine:
        both = f"{t} {combine[fn]} {s}"
        return f"CASE WHEN {t} IS NULL THEN {s} WHEN {s} IS NULL THEN {t} ELSE {both} END"
    simple = {
        "count": f"coalesce({t}, 0) + {s}", "min": f"least({t}, {s})",
        "max": f"greatest({t}, {s})", "last_non_null": f"coalesce({s}, {t})",
        "last_value": s, "first_non_null": f"coalesce({t}, {s})", "first_value": t,
    }
    return simple[fn]


def group_batch(seq: str, col: str, order: str, retract: bool) -> str:
    """A group column in a batch: its value in the row with the newest group sequence."""
    newest = struct_sql([q(seq), order])
    alive = f"NOT {DEL}" if retract else None
    return f"max_by({q(col)}, {newest}){filter_sql(f'{q(seq)} IS NOT NULL', alive)}"


def group_merge(seq: str, col: str) -> str:
    """A group column merged: the batch's when its group sequence is at least as new."""
    return (f"CASE WHEN s.{q(seq)} IS NOT NULL AND coalesce(s.{q(seq)} >= t.{q(seq)}, TRUE) "
            f"THEN s.{q(col)} ELSE t.{q(col)} END")
