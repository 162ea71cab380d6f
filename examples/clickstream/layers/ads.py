"""ADS: ``ads.daily_product_report`` — a batch job over DWD, refreshed as a materialized view.

The runner recomputes it when a snapshot of its inputs changed (its position is their
snapshot ids) and replaces the table in one ``overwrite`` commit that carries the
marker; in continuous mode no more often than ``icetide.refresh-interval``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from icetide import pipelines as dp


@dp.materialized_view(
    name="ads.daily_product_report",
    comment="Per day and product: page views, unique visitors, average expendTime",
    table_properties={"icetide.refresh-interval": "1 minute"},
)
def daily_product_report() -> DataFrame:
    clicks = dp.read("dwd.click_wide")
    return clicks.groupBy("dt", "productId").agg(
        F.count(F.lit(1)).alias("pv"),
        F.countDistinct("uid").alias("uv"),
        F.avg("expendTime").alias("avg_expend_time"),
    )
