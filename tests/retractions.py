"""An append table holding copies of a row, and a batch retracting from it: what the
retraction tests of ``lake/retract.py`` and ``lake/retract_positions.py`` start from."""

from __future__ import annotations

import itertools

from pyspark.sql import DataFrame, SparkSession

from icetide.lake.retract import RETRACT

_n = itertools.count()
ROW = "k string, v int, note string"


def copies_table(spark: SparkSession, namespace: str) -> str:
    """A merge-on-read table of five rows: three copies of ``(a, 1, old)``, ``(b, 2,
    NULL)``, ``(c, 3, x)``."""
    ident = f"lake.{namespace}.t{next(_n)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{namespace}")
    spark.sql(f"CREATE TABLE {ident} (k string, v int, note string) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
              "'write.merge.mode'='merge-on-read')")
    spark.createDataFrame([("a", 1, "old"), ("a", 1, "old"), ("a", 1, "old"),
                           ("b", 2, None), ("c", 3, "x")], ROW).writeTo(ident).append()
    return ident


def retraction_batch(spark: SparkSession, adds: list[tuple[object, ...]],
                     retracts: list[tuple[object, ...]]) -> DataFrame:
    """A flow's batch: ``adds`` to append, ``retracts`` naming rows by ``k`` and ``v``."""
    rows = [(*r, None) for r in adds] + [(*r, (r[0], r[1])) for r in retracts]
    return spark.createDataFrame(rows, f"{ROW}, {RETRACT} struct<k: string, v: int>")
