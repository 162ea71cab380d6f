"""Retract rows from an append table and append new ones, in ONE commit carrying the marker.

An append table has no key, so a retraction names the rows to remove by the columns its
flow carries unchanged from its inputs (``match``, see :mod:`icetide.engine.changes`):
each retraction removes one stored row with those values. Which of several such rows
goes is chosen deterministically (ordered by every column), so a replay removes the same.

Spark's MERGE cannot name a target row by position (``_file``/``_pos`` do not resolve in
its ``ON``), so the chosen rows are matched on all their columns: a MERGE deletes every
stored copy of each chosen row, and re-inserts the copies that were not chosen (they are
identical, so nothing else changes); the new rows are inserted by the same statement. A
batch with no new rows is a ``DELETE`` by position instead
(:mod:`icetide.lake.retract_positions`). A retraction that finds no stored row stops the
flow: the row it names was produced differently from how it is retracted now (a filter
or join on a lookup column whose value changed), and skipping it would leave the target
wrong without a word.

The rows the MERGE deletes are also written to a Parquet file named in its commit
(:data:`icetide.lake.changes.REMOVED_ROWS`): the flows below read them from there instead
of finding the deleted positions in every data file the retraction touched.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from icetide.errors import IcetideError
from icetide.lake import commit
from icetide.lake.changes import REMOVED_ROWS, write_removed
from icetide.lake.key_filter import in_sql, supported
from icetide.tables.sql import quote_ident as q
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

RETRACT = "__icetide_retract"
#: The most values a retraction's prune predicate lists. Without one, the MERGE joins the
#: whole target on every column (an erase in a 10 M-row table: every row shuffled), and
#: no range stands in for it, so the list may be longer than a MERGE key filter's.
PRUNE_LIST_LIMIT = 20_000
_views = itertools.count()
_KIND, _WANT, _RANK, _HAVE, _TAKE = (f"__icetide_{n}" for n in ("kind", "want", "rank",
                                                                   "have", "take"))


class UnmatchedRetraction(IcetideError):
    """Rows an input removed have no row to retract in the target."""

    def __init__(self, target: str, missing: int, match: Sequence[str]) -> None:
        super().__init__(
            f"{target}: {missing} row(s) removed upstream match no stored row on "
            f"{', '.join(match)}, the columns its flow carries unchanged: the target holds "
            "them as produced then, and a filter or join on a lookup value that has "
            "changed since selects them differently now. Rebuild it from its inputs: "
            f"`icetide table refresh {target.split('.', 1)[-1]}`")


def _null_safe(left: DataFrame, right: DataFrame, columns: Sequence[str]) -> Column:
    from functools import reduce

    return reduce(lambda a, b: a & b, (left[c].eqNullSafe(right[c]) for c in columns))


def candidates(stored: DataFrame, wanted: DataFrame, match: Sequence[str]) -> DataFrame:
    """Every stored row whose ``match`` values are retracted, with how many are."""
    from pyspark.sql import functions as F

    cand = stored.join(F.broadcast(wanted), _null_safe(stored, wanted, match), "inner")
    return cand.select(*[stored[c] for c in stored.columns], wanted[_WANT])


def chosen_rows(cand: DataFrame, columns: Sequence[str], match: Sequence[str]) -> DataFrame:
    """The stored rows to remove: per ``match`` value, as many as retracted."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy(*match).orderBy(*[F.col(c).asc_nulls_first() for c in columns])
    return cand.withColumn(_RANK, F.row_number().over(order)).where(F.col(_RANK) <= F.col(_WANT))


class MergePlan(NamedTuple):
    """The MERGE's source rows (``_KIND`` D: delete every copy, I: insert), the rows
    retracted, the retractions that found no row, a predicate pruning the target, and
    the stored rows the MERGE deletes (with ``COPIES``: how many of each)."""

    source: DataFrame
    taken: int
    missing: int
    prune: str | None
    deleted: DataFrame


def match_columns(df: DataFrame) -> list[str]:
    """The columns a batch's retractions name rows by (its ``RETRACT`` struct's fields)."""
    return [f.name for f in df.schema[RETRACT].dataType.fields]  # type: ignore[attr-defined]


def wanted_rows(df: DataFrame, held: list[DataFrame]
                ) -> tuple[list[str], list[str], DataFrame]:
    """The match columns, the target's columns and the retractions grouped by their match
    values with how many rows each retracts (``_WANT``), cached (added to ``held``)."""
    from pyspark.sql import functions as F

    match = match_columns(df)
    wanted = (df.where(F.col(RETRACT).isNotNull()).select(f"{RETRACT}.*")
              .groupBy(*match).agg(F.count(F.lit(1)).alias(_WANT))).persist()
    held.append(wanted)
    return match, [c for c in df.columns if c != RETRACT], wanted


def summarized(df: DataFrame, held: list[DataFrame]
               ) -> tuple[list[str], list[str], DataFrame, int, str | None]:
    """:func:`wanted_rows` with :func:`retraction_summary`: the match columns, the
    target's columns, the grouped retractions, how many rows they retract and the
    predicate pruning the target's scan (``None``: none)."""
    match, columns, wanted = wanted_rows(df, held)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    want, narrow = retraction_summary(wanted, match, types)
    return match, columns, wanted, want, narrow


def merge_source(spark: SparkSession, df: DataFrame, target: str, held: list[DataFrame]
                 ) -> MergePlan:
    """Plan the retraction MERGE; ``held``: frames it cached, for the caller to release
    after the MERGE. The target is scanned once here (the candidate rows are kept: every
    copy of a chosen row is among them; the scan is filtered like the MERGE's), once by
    the MERGE. Three small jobs and that scan: the retractions' count with the
    cardinality of each match column, the values of the fewest (the prune predicate),
    and the scan, which also counts the candidates (an observation) and the rows chosen."""
    from pyspark.sql import functions as F

    from icetide.lake.changes import COPIES

    match, columns, wanted, want, narrow = summarized(df, held)
    stored = spark.table(target).select(*columns)
    if narrow is not None:  # the same predicate as the MERGE's, on the candidates' scan
        stored = stored.alias("t").where(narrow)
    cand, per_row, found, taken = _take(candidates(stored, wanted, match), columns, match,
                                        held)
    # every retraction found its row: the chosen rows hold exactly the wanted match
    # values, so the candidates' predicate is theirs too (no second pair of jobs)
    prune = narrow if taken == want else None
    new_rows = df.where(F.col(RETRACT).isNull()).select(*columns).withColumn(_KIND, F.lit("I"))
    removed = per_row.select(*columns).withColumn(_KIND, F.lit("D"))
    if found == taken:  # every candidate goes (the usual case): no copy to put back
        deleted = per_row.select(*columns, F.col(_TAKE).cast("int").alias(COPIES))
        return MergePlan(removed.unionByName(new_rows), taken, want - taken, prune, deleted)
    source, deleted = _putting_back(cand, per_row, columns)
    return MergePlan(removed.unionByName(source).unionByName(new_rows), taken, want - taken,
                     prune, deleted)


def _take(candidates: DataFrame, columns: Sequence[str], match: Sequence[str],
          held: list[DataFrame]) -> tuple[DataFrame, DataFrame, int, int]:
    """The candidates and the stored rows chosen (``_TAKE``: how many copies of each), both
    cached, with how many rows each holds: one job, the scan of the target (the
    candidates are counted by an observation on the way)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation()
    cand = candidates.persist()
    held.append(cand)
    chosen = chosen_rows(cand.observe(seen, F.count(F.lit(1)).alias("n")), columns, match)
    per_row = chosen.drop(_RANK, _WANT).groupBy(*columns).agg(
        F.count(F.lit(1)).alias(_TAKE)).persist()
    held.append(per_row)
    taken = int(per_row.agg(F.sum(_TAKE)).collect()[0][0] or 0)
    return cand, per_row, int(seen.get["n"]), taken


def _putting_back(cand: DataFrame, per_row: DataFrame, columns: Sequence[str]
                  ) -> tuple[DataFrame, DataFrame]:
    """Where some stored copies of a chosen row stay: the ``I`` rows that put them back
    (the MERGE deletes every copy), and the rows deleted with their ``COPIES``."""
    from pyspark.sql import functions as F

    from icetide.lake.changes import COPIES

    have = cand.groupBy(*columns).agg(F.count(F.lit(1)).alias(_HAVE))
    counts = per_row.join(have, _null_safe(per_row, have, columns)).select(
        *[per_row[c] for c in columns], per_row[_TAKE], have[_HAVE])
    keep = counts.where(F.col(_HAVE) > F.col(_TAKE)).select(
        *columns, F.explode(F.array_repeat(F.lit(1), (F.col(_HAVE) - F.col(_TAKE)).cast("int"))))
    return (keep.select(*columns).withColumn(_KIND, F.lit("I")),
            counts.select(*columns, F.col(_HAVE).cast("int").alias(COPIES)))


def retraction_summary(wanted: DataFrame, match: Sequence[str], types: Mapping[str, str]
                       ) -> tuple[int, str | None]:
    """The rows to retract (``wanted``'s ``_WANT`` summed) and :func:`prune_predicate`'s
    predicate, in one job and, for the predicate's values, a second. The columns'
    cardinalities are estimated (HyperLogLog: one pass, where exact distinct counts of a
    dozen columns expand every row a dozen times); they only pick the column."""
    from pyspark.sql import functions as F

    usable = [c for c in match if supported(types.get(c, ""))]
    row = wanted.agg(F.sum(_WANT).alias(_WANT),
                     *[F.approx_count_distinct(F.col(c)).alias(c) for c in usable]
                     ).collect()[0]
    want = int(row[_WANT] or 0)
    if not want or not usable:
        return want, None
    return want, prune_predicate(wanted, match, types, {c: int(row[c]) for c in usable})


def prune_predicate(chosen: DataFrame, match: Sequence[str], types: Mapping[str, str],
                    counts: Mapping[str, int]) -> str | None:
    """A predicate on ``t`` that every stored copy of a chosen row satisfies: the chosen
    rows' values of the match column with the fewest of them. In the MERGE's ``ON`` it is
    applied to the target before the join, so the MERGE shuffles those rows instead of
    the whole table (see :mod:`icetide.lake.key_filter`). ``counts``: the distinct values
    of each usable match column, estimated (:func:`retraction_summary`)."""
    usable = [c for c in match if supported(types.get(c, ""))]
    if not usable:
        return None
    column = min(usable, key=lambda c: counts[c])
    if counts[column] > PRUNE_LIST_LIMIT:
        return None
    values = [r[0] for r in chosen.select(column).distinct().collect()]
    if len(values) > PRUNE_LIST_LIMIT:  # the estimate was low (within a few %)
        return None
    found = in_sql(column, values, types[column])
    if None not in values:
        return found
    nulls = f"t.{q(column)} IS NULL"
    return nulls if found is None else f"({found} OR {nulls})"


def merge_statement(target: str, view: str, columns: Sequence[str],
                    types: Mapping[str, str], prune: str | None = None) -> str:
    """The MERGE that deletes the ``D`` rows (every copy) and inserts the ``I`` rows;
    ``prune``: a predicate on ``t`` every deleted row satisfies."""
    def same(c: str) -> str:
        if "map<" in types.get(c, "").lower():
            return f"to_json(t.{q(c)}) <=> to_json(s.{q(c)})"
        return f"t.{q(c)} <=> s.{q(c)}"

    on = " AND ".join([f"s.{_KIND} = 'D'", *([prune] if prune else []),
                       *(same(c) for c in columns)])
    cols = ", ".join(q(c) for c in columns)
    vals = ", ".join(f"s.{q(c)}" for c in columns)
    return (f"MERGE INTO {quote_qualified(target)} AS t USING {view} AS s ON {on}\n"
            "WHEN MATCHED THEN DELETE\n"
            f"WHEN NOT MATCHED AND s.{_KIND} = 'I' THEN INSERT ({cols}) VALUES ({vals})")


def append_with_retractions(spark: SparkSession, df: DataFrame, target: str,
                            props: Mapping[str, str]) -> int:
    """Retract and append in one commit; the rows retracted."""
    held: list[DataFrame] = []
    view = f"__icetide_retract_{next(_views)}"
    try:
        plan = merge_source(spark, df, target, held)
        if plan.missing:
            raise UnmatchedRetraction(target, plan.missing, match_columns(df))
        plan.source.createOrReplaceTempView(view)
        types = {f.name: f.dataType.simpleString() for f in plan.source.schema.fields}
        columns = [c for c in df.columns if c != RETRACT]
        statement = merge_statement(target, view, columns, types, plan.prune)
        if plan.taken:  # written before the commit that names it: an orphan if it fails
            props = {**props, REMOVED_ROWS: write_removed(spark, target, plan.deleted)}
        commit.with_commit_properties(spark, props, lambda: _run(spark, statement))
    finally:
        spark.catalog.dropTempView(view)
        for frame in held:  # cached plans over staged scans must not outlive the batch
            frame.unpersist()
    return plan.taken


def _run(spark: SparkSession, statement: str) -> None:
    spark.sql(statement)
