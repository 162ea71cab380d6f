"""A batch whose inputs removed rows: what the flow's target must retract or recompute.

The engine runs the flow's query again over other views of its inputs (as differential
dataflow does for a linear operator) and hands the sink one frame that says what to do:

* **append target**: the query over the removed rows gives the rows to retract, marked
  with :data:`RETRACT` (a struct of the *lineage* columns: those carried unchanged from
  a stream input; :mod:`icetide.lake.retract` applies it);
* **primary-key target**: the query over the removed rows names the affected keys; an
  aggregation retracts what it can by arithmetic (:mod:`icetide.engine.group_retraction`),
  the rest are recomputed by the query over everything the inputs hold at the batch's
  end, restricted to those keys. :data:`REPLACE` says ``R`` (replace the row), ``D``
  (delete the key) or NULL (the usual increment; :class:`icetide.lake.sinks.MergeSink`).

A query not linear in its stream inputs (a join of two streams) cannot be retracted this
way; icetide has none. Per operator and table kind: docs/semantics.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from icetide.engine.group_retraction import split_groups
from icetide.errors import PipelineError, listed
from icetide.flows.context import BatchContext, bound
from icetide.lake.retract import RETRACT
from icetide.lake.sinks import REPLACE
from icetide.tables.merge_engines import Aggregation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Runs the flow's query under a batch context.
Query = Callable[[BatchContext], "DataFrame"]


def _attributes(df: DataFrame) -> dict[str, int]:
    """Output column → Spark attribute id of ``df``'s analyzed plan."""
    output = df._jdf.queryExecution().analyzed().output()
    attrs = (output.apply(i) for i in range(int(output.size())))
    return {str(a.name()): int(a.exprId().id()) for a in attrs}


def lineage(out: DataFrame, streamed: Mapping[str, DataFrame]) -> dict[str, tuple[str, str]]:
    """Output columns carried unchanged from a stream input: column → (source key,
    input column)."""
    found: dict[int, tuple[str, str]] = {}
    for key, frame in streamed.items():
        for name, attr in _attributes(frame).items():
            found.setdefault(attr, (key, name))
    return {name: found[attr] for name, attr in _attributes(out).items() if attr in found}


def _run(query: Query, ctx: BatchContext) -> DataFrame:
    with bound(ctx):
        return query(ctx)


def with_retractions(ctx: BatchContext, out: DataFrame, query: Query, target: str
                     ) -> DataFrame:
    """``out`` plus the rows to retract from an append target (:data:`RETRACT`)."""
    from pyspark.sql import functions as F

    carried = lineage(out, ctx.streamed)
    if not carried:
        raise PipelineError(
            f"{target}: its inputs removed rows in this batch, but none of its columns is "
            "carried unchanged from a streamed input, so the rows to retract cannot be "
            f"found. Keep an input column as it is (e.g. an id), or rebuild: `icetide table "
            f"refresh {target.split('.', 1)[-1]}`")
    # the query's output over the removed rows is kept, not its input: the removed rows
    # are read once, with only the columns the query uses
    gone = _run(query, ctx.derived("removed", cache_removed=False))
    match = [c for c in out.columns if c in carried]
    marked = F.struct(*[F.col(c) for c in match])
    none = F.lit(None).cast(gone.select(marked.alias("m")).schema["m"].dataType)
    gone = ctx.keep(f"retracted:{target}", gone.select(*out.columns).withColumn(RETRACT, marked))
    return out.withColumn(RETRACT, none).unionByName(gone)


def with_recomputed(ctx: BatchContext, out: DataFrame, query: Query, target: str,
                    keys: Sequence[str], engine: object = None) -> DataFrame:
    """``out`` for the keys no removal touched, plus the arithmetic retractions, the
    recomputed rows and the deletions (:data:`REPLACE`) of those it touched."""
    from pyspark.sql import functions as F

    missing = [k for k in keys if k not in out.columns]
    if missing:
        raise PipelineError(f"{target}: key column(s) {listed(missing)} are not produced by "
                            "its flow, so the groups a removal touches cannot be recomputed")
    # read once, for the keys (kept): Spark reads only the columns the query uses
    gone = _run(query, ctx.derived("removed", cache_removed=False))
    emptied: DataFrame | None = None
    increments: DataFrame | None = None
    if isinstance(engine, Aggregation):
        split = split_groups(ctx, out, gone, target, keys, engine)
        affected, emptied, increments = split.recompute, split.emptied, split.increments
    else:
        affected = ctx.keep(f"affected:{target}", gone.select(*keys).distinct())
    parts = [_recomputed(ctx, out, query, target, keys, affected)]
    touched = affected if emptied is None else affected.unionByName(emptied)
    parts.append(out.join(touched, list(keys), "left_anti").withColumn(REPLACE, F.lit(None)))
    if increments is not None and emptied is not None:
        parts.append(increments.select(*out.columns).withColumn(REPLACE, F.lit(None)))
        parts.append(out.join(emptied, list(keys), "left_semi").withColumn(REPLACE, F.lit("R")))
        parts.append(_deletions(out, emptied.join(out.select(*keys), list(keys), "left_anti"),
                                keys))
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _deletions(out: DataFrame, gone_keys: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``D`` rows (in ``out``'s columns) deleting ``gone_keys``."""
    from pyspark.sql import functions as F

    blank = [F.lit(None).cast(f.dataType).alias(f.name) for f in out.schema.fields
             if f.name not in keys]
    return (gone_keys.select(*keys, *blank).select(*out.columns)
            .withColumn(REPLACE, F.lit("D")))


def _recomputed(ctx: BatchContext, out: DataFrame, query: Query, target: str,
                keys: Sequence[str], affected: DataFrame) -> DataFrame:
    """The ``affected`` keys' rows recomputed from the inputs' current rows (``R``), and
    ``D`` for those the recomputation no longer produces; nothing is read when there
    are none."""
    from pyspark.sql import functions as F

    if affected.isEmpty():
        return out.limit(0).withColumn(REPLACE, F.lit(None).cast("string"))
    fresh = _run(query, ctx.derived("full", _prefilters(ctx, out, affected, keys)))
    # read twice below (the rows, and the keys it no longer produces), in the same jobs:
    # computed now, once, and cut from the inputs' plans
    fresh = fresh.join(affected, list(keys), "left_semi").localCheckpoint(eager=True)
    vanished = affected.join(fresh.select(*keys), list(keys), "left_anti")
    return (fresh.select(*out.columns).withColumn(REPLACE, F.lit("R"))
            .unionByName(_deletions(out, vanished, keys)))


def _prefilters(ctx: BatchContext, out: DataFrame, affected: DataFrame,
                keys: Sequence[str]) -> dict[str, DataFrame]:
    """Per streamed input that carries every output key unchanged: the affected keys under
    the input's own column names (that input is read for them alone)."""
    carried = lineage(out, ctx.streamed)
    by_source: dict[str, dict[str, str]] = {}
    for key in keys:
        if key in carried:
            source, column = carried[key]
            by_source.setdefault(source, {})[key] = column
    return {source: affected.select(*[affected[k].alias(c) for k, c in names.items()])
            for source, names in by_source.items() if len(names) == len(keys)}
