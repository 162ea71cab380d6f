"""DWS: per-product views with an exact UV, and the per-user wide profile.

``dws.product_user`` (first-row, changelog)
    One row per (productId, uid) pair ever seen. Its changelog holds ``+I`` for *new*
    pairs only (first-row never updates), so "how many new users did this batch bring to
    a product" is a plain count of the changelog rows.
``dws.product_views`` (aggregation)
    One flow with two inputs folds into it: ``count_views_uv`` adds each batch's click
    count per product (``views = sum``) and the new pairs from ``product_user``'s
    changelog (``uv = sum``) — so ``uv`` is an exact distinct count maintained
    incrementally, with no HLL error and no re-scan of history. ``name`` and
    ``product_price`` are ``last_non_null``: the newest enrichment wins; the stored
    ``_seq`` (``max``) is the newest event time (epoch ms) folded in and is the ordinal
    that orders rows inside a batch.
``dws.user_activity`` (aggregation, changelog)
    Click counters per user: clicks, total expendTime, last click.
``dws.user_profile`` (partial-update with sequence groups)
    The wide table: activity columns from ``user_activity``'s changelog (absolute totals,
    so a partial update of them is exact), member columns from the ``dim_db.user_member``
    changelog. Each side is a sequence group, so neither flow can overwrite the other's
    columns with nulls, and an older change of a group never overwrites a newer one:
    activity is versioned by ``clicks`` (monotonic), member attributes by the member
    changelog's ``_seq``. Counters are summed *before* the partial update (in
    user_activity): partial-update alone cannot add.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from icetide import pipelines as dp

PRICE_TYPE = "decimal(10,4)"
#: Per product, per (product, user), per user: tables of a few thousand rows. Declared
#: unpartitioned instead of a primary-key table's default ``bucket(16, key)``: each commit
#: then writes one data (and delete) file, not one per bucket touched, and every MERGE and
#: compaction opens a few files instead of dozens. At 2,000 events/s this took 39 % more
#: click batches through the layers in the same time (docs/benchmarks.md, 2026-11-25 23:11).
SMALL: list[str] = []


@dp.table(
    name="dws.product_user",
    comment="Every (product, user) pair seen; changelog +I = a new pair",
    primary_key=["productId", "uid"],
    partition_cols=SMALL,
    merge_engine=dp.first_row("first_seen"),
    changelog=True,
)
def product_user() -> DataFrame:
    clicks = dp.read_stream("dwd.click_wide").where(F.col("uid").isNotNull())
    return clicks.groupBy("productId", "uid").agg(F.min("eventTime").alias("first_seen"))


#: Every batch updates nearly every row of this small table: copy-on-write rewrites its
#: few files in place, where merge-on-read would add a data and a delete file per bucket
#: per commit, and every MERGE would read them all until the next compaction.
REWRITTEN_IN_PLACE = {f"write.{op}.mode": "copy-on-write" for op in ("merge", "update", "delete")}

dp.create_streaming_table(
    "dws.product_views",
    comment="Views and exact unique visitors per product, maintained incrementally",
    table_properties=REWRITTEN_IN_PLACE,
    primary_key=["productId"],
    partition_cols=SMALL,
    merge_engine=dp.aggregation(views="sum", uv="sum", _seq="max"),
    # freshness: `tables:` in icetide-pipeline.yml (10 s unless the run sets it)
)


@dp.append_flow(target="dws.product_views")
def count_views_uv() -> DataFrame:
    """Per product, the batch's clicks (``views``) and the users new to it (``uv``).

    One flow with two inputs, each read from its own committed position: the new rows of
    ``dwd.click_wide`` and the new ``+I`` rows of ``product_user``'s changelog. Both
    counts land in one MERGE a batch; the sink folds the two rows of a product with the
    table's aggregation engine (``views``/``uv`` summed, the enrichment of the newest
    click kept). It runs again when either input commits; as two flows (``count_views``,
    ``count_uv``) they ran a MERGE each per click batch, the second waiting for the first
    (one writer per table): 258 worker-seconds against 234 in one 5-minute run at 2,000
    events/s (docs/benchmarks.md, 2026-11-25 22:57).
    """
    clicks = dp.read_stream("dwd.click_wide")
    views = clicks.groupBy("productId").agg(
        F.max_by("name", "updateTime").alias("name"),
        F.max_by("product_price", "updateTime").cast(PRICE_TYPE).alias("product_price"),
        F.count(F.lit(1)).alias("views"),
        F.lit(0).cast("bigint").alias("uv"),
        F.max("updateTime").cast("bigint").alias("_seq"),
    )
    new_pairs = dp.read_stream("dws.product_user").where(F.col("_op") == "+I")
    visitors = new_pairs.groupBy("productId").agg(
        F.lit(None).cast("string").alias("name"),
        F.lit(None).cast(PRICE_TYPE).alias("product_price"),
        F.lit(0).cast("bigint").alias("views"),
        F.count(F.lit(1)).alias("uv"),
        F.lit(None).cast("bigint").alias("_seq"),
    )
    return views.unionByName(visitors)


@dp.table(
    name="dws.user_activity",
    comment="Click counters per user",
    primary_key=["uid"],
    partition_cols=SMALL,
    merge_engine=dp.aggregation(clicks="sum", expend_time="sum", last_click="max"),
    changelog=True,
)
def user_activity() -> DataFrame:
    clicks = dp.read_stream("dwd.click_wide").where(F.col("uid").isNotNull())
    return clicks.groupBy("uid").agg(
        F.count(F.lit(1)).alias("clicks"),
        F.sum(F.coalesce(F.col("expendTime").cast("bigint"), F.lit(0))).alias("expend_time"),
        F.max("eventTime").alias("last_click"),
    )


dp.create_streaming_table(
    "dws.user_profile",
    comment="Wide user profile: activity counters + member attributes (partial update)",
    primary_key=["uid"],
    partition_cols=SMALL,
    merge_engine=dp.partial_update(
        "updated_at",
        sequence_groups={"clicks": ["expend_time", "last_click"],
                         "member_seq": ["member_name", "memberLevel"]},
    ),
)


def _profile(df: DataFrame, updated_at: str, activity: bool, member: bool) -> DataFrame:
    """One side of the profile: the other group's columns stay NULL (left untouched)."""
    def col(name: str, typ: str, present: bool) -> Column:
        return (F.col(name) if present else F.lit(None)).cast(typ).alias(name)

    return df.select(
        "uid", col("clicks", "bigint", activity), col("expend_time", "bigint", activity),
        col("last_click", "timestamp", activity), col("member_seq", "bigint", member),
        col("member_name", "string", member), col("memberLevel", "int", member),
        F.col(updated_at).cast("timestamp").alias("updated_at"),
    )


@dp.append_flow(target="dws.user_profile")
def profile_activity() -> DataFrame:
    changes = dp.read_stream("dws.user_activity").where(F.col("_op").isin("+I", "+U"))
    return _profile(changes, "last_click", activity=True, member=False)


@dp.append_flow(target="dws.user_profile")
def profile_member() -> DataFrame:
    members = dp.read_stream("dim_db.user_member")
    if "_op" in members.columns:  # a changelog (CDC): after images of inserts and updates
        members = members.where(F.col("_op").isin("+I", "+U"))
    else:  # no changelog yet: the rows appended to the dimension, ordered by update_time
        members = members.withColumn("_seq", F.unix_micros("update_time"))
    members = (members.withColumnRenamed("userid", "uid")
               .withColumnRenamed("name", "member_name")
               .withColumnRenamed("_seq", "member_seq"))
    return _profile(members, "update_time", activity=False, member=True)
