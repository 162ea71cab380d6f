"""Run SQL on the Spark engine (the authoritative path: any catalog, reads and writes)."""

from __future__ import annotations

import logging
import time

from pyspark.sql import Row, SparkSession

from icetide.query.result import QueryResult, plain_value

log = logging.getLogger(__name__)


def _row_fields(value: object) -> dict[str, object] | None:
    return value.asDict() if isinstance(value, Row) else None


def _plain(value: object) -> object:
    return plain_value(value, _row_fields)


def run_sql(spark: SparkSession, query: str, max_rows: int | None = None) -> QueryResult:
    """Run ``query`` and collect at most ``max_rows`` rows (``None``: all of them).

    Statements without a result (DDL, INSERT, MERGE) run eagerly and return no rows.
    """
    started = time.perf_counter()
    df = spark.sql(query)
    columns = list(df.columns)
    if max_rows is None:
        rows = df.collect()
        truncated = False
    else:
        rows = df.take(max_rows + 1)
        truncated = len(rows) > max_rows
        rows = rows[:max_rows]
    log.debug("spark query returned %d rows in %.2fs", len(rows), time.perf_counter() - started)
    return QueryResult(columns, [tuple(_plain(v) for v in row) for row in rows], truncated)
