"""A Hudi table's changes between two commits as a changelog (Spark side): the rows of
:class:`icetide.sources.hudi.HudiTableSource`.

Hudi's CDC query (``incremental`` with format ``cdc``, the range ``(start, end]`` of
completion times) names the keys the range inserted, updated or deleted; the rows come
typed from two snapshot reads travelling to the range's first and last commit
(``as.of.instant``), kept to those keys. Before image only → ``-D``; after image only →
``+I``; both, different → ``-U`` and ``+U``; both equal → nothing (a write the ordering
field ignored, or a change undone within the range). The CDC query's own images are not
read: Hudi 1.2.0 writes a decimal in them as ``{"zero": ...}`` (docs/stack.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icetide.lake.hudi import HudiTable, read
from icetide.lake.hudi_timeline import instant_ms
from icetide.tables.changelog import COMMIT_TS, OP, SEQ

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: ``_seq`` = the end commit's completion ms × this + the row's number in the batch.
SEQ_SPAN = 1_000_000


def changed_keys(spark: SparkSession, table: HudiTable, begin: str, end: str,
                 like: DataFrame) -> DataFrame:
    """The distinct keys Hudi's CDC query finds in ``(begin, end]`` (completion times),
    typed as ``like``'s key columns."""
    from pyspark.sql import functions as F

    cdc = (spark.read.format("hudi")
           .option("hoodie.datasource.query.type", "incremental")
           .option("hoodie.datasource.query.incremental.format", "cdc")
           .option("hoodie.datasource.read.begin.instanttime", begin)
           .option("hoodie.datasource.read.end.instanttime", end).load(table.path))
    # a delete's after image is not always NULL (an empty text from a CDC log file)
    image = F.when(F.col("op") == "d", F.col("before")).otherwise(F.col("after"))
    types = dict(like.dtypes)
    return cdc.select(*[F.get_json_object(image, f"$.{k}").cast(types[k]).alias(k)
                        for k in table.keys]).distinct()


def changes(spark: SparkSession, table: HudiTable, begin: str, end: str,
            begin_requested: str, end_requested: str) -> DataFrame:
    """The net change per key of ``(begin, end]`` as changelog rows (``+I/-U/+U/-D``)."""
    after = read(spark, table, end_requested)
    keys = changed_keys(spark, table, begin, end, after)
    keys = keys.cache()  # joined four times below
    before = read(spark, table, begin_requested).join(keys, list(table.keys), "left_semi")
    after = after.join(keys, list(table.keys), "left_semi")
    gone, came = before.exceptAll(after), after.exceptAll(before)
    on = list(table.keys)
    rows = (came.join(before, on, "left_anti").withColumn(OP, _op("+I"))
            .unionByName(came.join(before, on, "left_semi").withColumn(OP, _op("+U")))
            .unionByName(gone.join(after, on, "left_semi").withColumn(OP, _op("-U")))
            .unionByName(gone.join(after, on, "left_anti").withColumn(OP, _op("-D"))))
    return _numbered(rows, table, end)


def inserted(spark: SparkSession, table: HudiTable, end_requested: str | None,
             end: str | None) -> DataFrame:
    """The table as of ``end_requested`` as ``+I`` rows (``None``: no row, its columns)."""
    rows = read(spark, table, end_requested)
    if end_requested is None or end is None:
        return _numbered(rows.limit(0).withColumn(OP, _op("+I")), table, None)
    return _numbered(rows.withColumn(OP, _op("+I")), table, end)


def _op(value: str) -> Column:
    from pyspark.sql import functions as F

    return F.lit(value)


def _numbered(rows: DataFrame, table: HudiTable, end: str | None) -> DataFrame:
    """``_seq`` (by key, ``-U`` before ``+U``) and ``_commit_ts`` (the end commit's time)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    base = 0 if end is None else instant_ms(end) * SEQ_SPAN
    rank = F.when(F.col(OP) == "-U", 0).otherwise(1)
    order = Window.orderBy(*[F.col(k) for k in table.keys], rank)
    at = None if end is None else instant_ms(end) / 1000
    return (rows.withColumn(SEQ, (F.lit(base) + F.row_number().over(order)).cast("bigint"))
            .withColumn(COMMIT_TS, F.lit(at).cast("double").cast("timestamp")))
