"""DWD: ``dwd.click_wide`` — every click enriched with its product and its member level.

Each micro-batch is what ``ods_behavior.clickevent`` appended since the flow's last
commit (``dp.read_stream``), joined with the *current* snapshot of the dimensions
(``dp.read``: the seed's ``FOR SYSTEM_TIME AS OF proctime`` lookup join), so a price
change in ``dim_db.products`` shows in the enrichment of the events processed after it.

The join broadcasts the dimensions (a few thousand rows at most): the fact side is
never shuffled, so a hot product holding half of the events costs no more than any
other key — every task joins the rows of its own input split. A storage-partitioned
join (no shuffle on either side) needs both sides to be *table scans* reporting the
same ``bucket(N, key)`` grouping; the micro-batch is neither (the flow loop persists it
and ODS is partitioned by day), see examples/clickstream/LAYERS.md.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from icetide import pipelines as dp

CLICK_COLUMNS = ("webpageId", "uid", "productId", "cookieId", "expendTime", "updateTime",
                 "eventTime", "dt")


def enrich(clicks: DataFrame, products: DataFrame, members: DataFrame) -> DataFrame:
    """Clicks left-joined with product name/price and the member's level (broadcast)."""
    product_cols = products.select("productId", "name", "product_price")
    member_cols = members.select(F.col("userid").alias("uid"), "memberLevel")
    return (
        clicks.select(*CLICK_COLUMNS)
        .join(F.broadcast(product_cols), "productId", "left")
        .join(F.broadcast(member_cols), "uid", "left")
        .select(*CLICK_COLUMNS, "name", "product_price", "memberLevel")
    )


@dp.table(
    name="dwd.click_wide",
    comment="Clicks with the product (name, price) and member level current at processing",
    partition_cols=["days(eventTime)"],
    # freshness: `tables:` in icetide-pipeline.yml (10 s unless the run sets it)
)
def click_wide() -> DataFrame:
    return enrich(dp.read_stream("ods_behavior.clickevent"), dp.read("dim_db.products"),
                  dp.read("dim_db.user_member"))
