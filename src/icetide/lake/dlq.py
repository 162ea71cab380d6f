"""Dead-letter tables: bad input is never dropped and never crashes a flow.

Every row a flow cannot turn into a target row lands here with the raw bytes, where
it came from (source, topic/partition/offset or a source position) and the reason.
The dead-letter append carries the flow's marker, so it is exactly-once like the
target (see :mod:`icetide.model.markers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icetide.tables.ddl import APPEND_TABLE_PROPERTIES, create_table_sql
from icetide.tables.sql import quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The table comment of every dead-letter table (how readers of the catalog find them).
DLQ_COMMENT = "icetide dead letters: rows a flow rejected"

DLQ_COLUMNS: tuple[tuple[str, str], ...] = (
    ("flow", "string"),
    ("source", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("position", "string"),
    ("raw", "binary"),
    ("error", "string"),
    ("source_ts", "timestamp"),
    ("ingested_at", "timestamp"),
)


def ensure_dlq_table(spark: SparkSession, ident: str) -> None:
    """Create the dead-letter table ``catalog.db.table`` if it does not exist."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote_qualified(ident.rsplit('.', 1)[0])}")
    spark.sql(create_table_sql(
        ident, DLQ_COLUMNS, partition_sql=["days(`ingested_at`)"],
        properties=APPEND_TABLE_PROPERTIES, comment=DLQ_COMMENT,
    ))


def dead_letters(invalid: DataFrame, *, flow: str, source: str) -> DataFrame:
    """Shape rejected Kafka rows (``value, topic, partition, offset, timestamp, error``)."""
    from pyspark.sql import functions as F

    return invalid.select(
        F.lit(flow).alias("flow"),
        F.lit(source).alias("source"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        F.lit(None).cast("string").alias("position"),
        F.col("value").cast("binary").alias("raw"),
        F.col("error").cast("string").alias("error"),
        F.col("timestamp").cast("timestamp").alias("source_ts"),
        F.current_timestamp().alias("ingested_at"),
    )
