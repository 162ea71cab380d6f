"""Load the seed's dimension rows straight into the lake (``icetide seed dims``).

A stand-in for the CDC flow: creates ``dim_db.products`` and ``dim_db.user_member`` as
primary-key tables and upserts the seed rows, so re-running changes nothing.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from icetide.devkit.gen.seed_rows import PRODUCTS, USER_MEMBERS
from icetide.tables.ddl import PRIMARY_KEY_TABLE_PROPERTIES, create_table_sql
from icetide.tables.sql import quote_ident, quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

PRODUCTS_COLUMNS = (
    ("productId", "string NOT NULL"), ("name", "string"), ("description", "string"),
    ("product_price", "decimal(10,4)"), ("update_time", "timestamp"),
)
USER_MEMBER_COLUMNS = (
    ("userid", "string NOT NULL"), ("name", "string"), ("show_params", "string"),
    ("memberLevel", "int"), ("update_time", "timestamp"),
)


def ensure_pk_table(spark: SparkSession, ident: str, columns: tuple[tuple[str, str], ...],
                    key: str, buckets: int = 4) -> None:
    """Create a primary-key table (bucketed on the key, identifier field = key) if missing."""
    db = ident.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote_qualified(db)}")
    spark.sql(create_table_sql(ident, columns,
                               partition_sql=[f"bucket({buckets}, {quote_ident(key)})"],
                               properties=PRIMARY_KEY_TABLE_PROPERTIES))
    spark.sql(f"ALTER TABLE {quote_qualified(ident)} SET IDENTIFIER FIELDS {quote_ident(key)}")


def _upsert(spark: SparkSession, ident: str, rows: list[tuple[object, ...]],
            columns: tuple[tuple[str, str], ...], key: str) -> int:
    schema = ", ".join(f"{quote_ident(n)} {t.replace(' NOT NULL', '')}" for n, t in columns)
    spark.createDataFrame(rows, schema).createOrReplaceTempView("icetide_seed_rows")
    spark.sql(
        f"MERGE INTO {quote_qualified(ident)} t USING icetide_seed_rows s "
        f"ON t.{quote_ident(key)} = s.{quote_ident(key)} "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    return len(rows)


def load_seed_dimensions(spark: SparkSession, catalog: str) -> dict[str, int]:
    """Create and fill the seed's two dimension tables; returns rows offered per table."""
    now = datetime.now(UTC).replace(tzinfo=None)
    products = f"{catalog}.dim_db.products"
    members = f"{catalog}.dim_db.user_member"
    ensure_pk_table(spark, products, PRODUCTS_COLUMNS, "productId")
    ensure_pk_table(spark, members, USER_MEMBER_COLUMNS, "userid")
    return {
        "dim_db.products": _upsert(spark, products, [(*p, now) for p in PRODUCTS],
                                   PRODUCTS_COLUMNS, "productId"),
        "dim_db.user_member": _upsert(spark, members, [(*m, now) for m in USER_MEMBERS],
                                      USER_MEMBER_COLUMNS, "userid"),
    }
