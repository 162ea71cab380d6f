"""Which groups of an aggregation target retract by arithmetic, and which are recomputed.

When an input removed rows, the flow's query over those rows (``gone``) gives, per
affected key, what the removed rows had contributed. For a table with the
:class:`~icetide.tables.merge_engines.Aggregation` engine each group is then one of:

* ``A`` — **retracted by arithmetic**: every ``sum`` column takes ``-gone`` as an
  increment (exact: a sum is invertible); every other column is provably unchanged —
  ``max``/``min`` because the removed rows' extreme is strictly inside the stored one
  (its row remains), a sequence group's columns because no removed row carried the
  group's stored (newest) sequence, ``last_non_null``/``first_non_null``/``bool_*``
  because the removed rows gave the column no value. The group must also be provably
  non-empty: a ``max`` or ``min`` shown unchanged, or a row count left above zero.
* ``D`` — **emptied**: a row-count column (a ``sum`` of the query's ``count(1)``) drops to
  zero, so every row of the group was removed: the stored row goes (what this batch
  added to the key, if anything, becomes the row).
* ``R`` — **recomputed** from the inputs' current rows (:mod:`icetide.engine.changes`):
  everything else (``count``, ``last_value``, ``first_value``, an extreme that was
  removed, no proof the group still has rows).

Deciding reads the stored rows of the affected keys only; recomputing is the only step
that reads the inputs in full.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from icetide.tables.merge_engines import Aggregation

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import Column, DataFrame

    from icetide.flows.context import BatchContext

_STATUS, _PRESENT = "__icetide_group", "__icetide_present"
_UNCHANGED_WHEN_NULL = frozenset({"last_non_null", "first_non_null", "bool_and", "bool_or"})


@dataclass(frozen=True)
class GroupSplit:
    """The affected keys of a batch, by what becomes of their group."""

    increments: DataFrame  # the ``A`` groups' arithmetic increments, in the output's columns
    emptied: DataFrame  # ``D``: keys whose every row was removed
    recompute: DataFrame  # ``R``: keys recomputed from the inputs


_PASS_THROUGH = frozenset({"Project", "SubqueryAlias", "ResolvedHint"})


def row_counts(df: DataFrame) -> set[str]:
    """Output columns that count their group's input rows: the query's ``count(1)`` in
    the aggregation its output comes straight from (through projections only: a union, a
    join or a filter above it could add, drop or duplicate groups), by attribute id."""
    plan = df._jdf.queryExecution().analyzed()
    node, above = plan, []
    while str(node.getClass().getSimpleName()) in _PASS_THROUGH:
        above.append(node)
        node = node.children().apply(0)
    if str(node.getClass().getSimpleName()) != "Aggregate":
        return set()
    counting = _aliases(node.aggregateExpressions(), lambda e: str(e.sql()) == "count(1)")
    for step in reversed(above):  # renames on the way up: an alias of a counting column
        if str(step.getClass().getSimpleName()) == "Project":
            counting |= _aliases(step.projectList(), partial(_refers_to, frozenset(counting)))
    output = plan.output()
    return {str(a.name()) for a in (output.apply(i) for i in range(int(output.size())))
            if int(a.exprId().id()) in counting}


def _refers_to(ids: frozenset[int], e: JavaObject) -> bool:
    return (str(e.getClass().getSimpleName()) == "AttributeReference"
            and int(e.exprId().id()) in ids)


def _aliases(exprs: JavaObject, wanted: Callable[[JavaObject], bool]) -> set[int]:
    """Attribute ids of the ``Alias`` expressions among ``exprs`` whose child is ``wanted``."""
    return {int(e.exprId().id()) for e in (exprs.apply(i) for i in range(int(exprs.size())))
            if str(e.getClass().getSimpleName()) == "Alias" and wanted(e.child())}


def _fold(fn: str, column: str) -> Column:
    """How the removed rows' values of ``column`` are folded per key to decide."""
    from pyspark.sql import functions as F

    if fn in ("sum", "max", "min"):
        folded: Column = getattr(F, fn)(column)
        return folded.alias(column)
    return F.count(column).alias(column)  # how many removed rows gave it a value


def _verdict(engine: Aggregation, columns: Sequence[str], counted: set[str]) -> Column:
    """``A``, ``D`` or ``R`` for a row of removed (``g.``) and stored (``s.``) values."""
    from functools import reduce

    from pyspark.sql import functions as F

    ok, proofs, empty = [], [], []
    for c in columns:
        fn, g, s = engine.function_of(c), F.col(f"g.{c}"), F.col(f"s.{c}")
        seq = engine.group_of(c)
        if seq is not None:  # kept unless a removed row was the group's newest
            ok.append(F.col(f"g.{seq}").isNull() | (F.col(f"g.{seq}") < F.col(f"s.{seq}")))
        elif fn == "sum":
            ok.append(F.lit(True))
            if c in counted:
                left = s - F.coalesce(g, F.lit(0))
                proofs.append(left > 0)
                empty.append(left == 0)
        elif fn in ("max", "min"):
            inside = g < s if fn == "max" else g > s
            ok.append(g.isNull() | inside)
            proofs.append(g.isNotNull() & inside)
        else:
            ok.append(F.lit(fn in _UNCHANGED_WHEN_NULL) & (g == 0))
    every = reduce(lambda a, b: a & b, ok, F.lit(True))
    proven = reduce(lambda a, b: a | b, proofs, F.lit(False))
    emptied = reduce(lambda a, b: a | b, empty, F.lit(False))
    return (F.when(F.col(_PRESENT).isNull(), "R").when(F.coalesce(emptied, F.lit(False)), "D")
            .when(F.coalesce(every & proven, F.lit(False)), "A").otherwise("R"))


def split_groups(ctx: BatchContext, out: DataFrame, gone: DataFrame, target: str,
                 keys: Sequence[str], engine: Aggregation) -> GroupSplit:
    """Sort the keys ``gone`` touches into arithmetic, emptied and recomputed groups."""
    from pyspark.sql import functions as F

    held = set(ctx.spark.table(target).columns)
    columns = [c for c in out.columns if c not in keys and c in held]
    counted = row_counts(out) & {c for c in columns if engine.function_of(c) == "sum"}
    folded = gone.groupBy(*keys).agg(*[_fold(engine.function_of(c), c) for c in columns])
    folded = ctx.keep(f"removed-groups:{target}", folded)
    stored = (ctx.spark.table(target).select(*keys, *columns)
              .join(F.broadcast(folded.select(*keys)), list(keys), "left_semi")
              .withColumn(_PRESENT, F.lit(True)))
    decided = folded.alias("g").join(stored.alias("s"), list(keys), "left").select(
        *keys, _verdict(engine, columns, counted).alias(_STATUS),
        *[F.col(f"g.{c}").alias(c) for c in columns])
    # cut from the target's plan: the MERGE of this batch makes Spark drop (and later
    # recompute, over the new rows) every cached plan that reads the target
    decided = decided.localCheckpoint(eager=True)
    status = F.col(_STATUS)
    increments = decided.where(status == "A").select(*[
        F.col(f.name) if f.name in keys
        else ((-F.col(f.name)) if f.name in columns and engine.function_of(f.name) == "sum"
              else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in out.schema.fields])
    return GroupSplit(increments, decided.where(status == "D").select(*keys),
                      decided.where(status == "R").select(*keys))
