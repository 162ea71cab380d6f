"""DWS: per-product views with an exact UV, and the per-user wide profile.

``dws.product_user`` (aggregation ``first_seen = min``, changelog)
    One row per (productId, uid) pair in the clicks; its changelog's ``+I``/``-D`` are the
    pairs a batch brought to or took from a product.
``dws.product_views`` (aggregation)
    ``count_views_uv`` folds each batch's click count per product (``views = sum``) and
    the pairs new to or gone from ``product_user`` (``uv = sum`` of +1/-1): an exact
    distinct count maintained incrementally; ``name``/``product_price`` are those of the
    newest enriched click (a sequence group ordered by its ``updateTime``).
``dws.user_activity`` (aggregation, changelog)
    Click counters per user: clicks, total expendTime, last click.
``dws.user_profile`` (partial-update with sequence groups)
    The wide table: activity totals from ``user_activity``'s changelog and member columns
    from ``dim_db.user_member``'s, each side a sequence group; a row left empty is deleted.

Why each table is built this way: examples/clickstream/LAYERS.md.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from icetide import pipelines as dp

PRICE_TYPE = "decimal(10,4)"
#: Per product, per (product, user), per user: tables of a few thousand rows. Declared
#: unpartitioned instead of a primary-key table's default ``bucket(16, key)``: each commit
#: then writes one data (and delete) file, not one per bucket touched, and every MERGE and
#: compaction opens a few files instead of dozens, so more click batches get through the
#: layers in the same time.
SMALL: list[str] = []


@dp.table(
    name="dws.product_user",
    comment="Every (product, user) pair seen; changelog +I = a new pair, -D = a pair gone",
    primary_key=["productId", "uid"],
    partition_cols=SMALL,
    # min, not first-row: a correction may bring a pair an older click than it has
    merge_engine=dp.aggregation(first_seen="min"),
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
    # name and price come from the newest enriched click (its updateTime: name_seq), so
    # removing older clicks (an erase) provably leaves them as they are: no recomputation
    merge_engine=dp.aggregation(views="sum", uv="sum", _seq="max",
                                sequence_groups={"name_seq": ["name", "product_price"]}),
    # freshness: `tables:` in icetide-pipeline.yml (10 s unless the run sets it)
)

#: A click that carries the product's enrichment (the lookup found the product).
ENRICHED = "name IS NOT NULL OR product_price IS NOT NULL"


def _newest(column: str) -> Column:
    """The column's value in the newest enriched click (by ``updateTime``)."""
    return F.expr(f"max_by({column}, updateTime) FILTER (WHERE {ENRICHED})").alias(column)


@dp.append_flow(target="dws.product_views")
def count_views_uv() -> DataFrame:
    """Per product, the batch's clicks (``views``) and the users new to it (``uv``).

    One flow with two inputs, each read from its own committed position: the new rows of
    ``dwd.click_wide`` and the new ``+I`` rows of ``product_user``'s changelog. Both
    counts land in one MERGE a batch; the sink folds the two rows of a product with the
    table's aggregation engine (``views``/``uv`` summed, the enrichment of the newest
    click kept). It runs again when either input commits; as two flows (``count_views``,
    ``count_uv``) they ran a MERGE each per click batch, the second waiting for the first
    (one writer per table), which cost more worker time.
    """
    clicks = dp.read_stream("dwd.click_wide")
    views = clicks.groupBy("productId").agg(
        _newest("name"),
        _newest("product_price").cast(PRICE_TYPE).alias("product_price"),
        F.count(F.lit(1)).alias("views"),
        F.lit(0).cast("bigint").alias("uv"),
        F.max("updateTime").cast("bigint").alias("_seq"),
        F.expr(f"max(updateTime) FILTER (WHERE {ENRICHED})").cast("bigint").alias("name_seq"),
    )
    # +I: a pair new to the product; -D: a pair gone (all its clicks were removed)
    pairs = dp.read_stream("dws.product_user").where(F.col("_op").isin("+I", "-D"))
    visitors = pairs.groupBy("productId").agg(
        F.lit(None).cast("string").alias("name"),
        F.lit(None).cast(PRICE_TYPE).alias("product_price"),
        F.lit(0).cast("bigint").alias("views"),
        F.sum(F.when(F.col("_op") == "+I", 1).otherwise(-1)).cast("bigint").alias("uv"),
        F.lit(None).cast("bigint").alias("_seq"),
        F.lit(None).cast("bigint").alias("name_seq"),
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
        sequence_groups={"activity_seq": ["clicks", "expend_time", "last_click"],
                         "member_seq": ["member_name", "memberLevel"]},
        remove_empty=True,  # a user erased from the clicks and no member: no row
    ),
)


def _profile(df: DataFrame, updated_at: str, activity: bool, member: bool) -> DataFrame:
    """One side of the profile: the other group's columns stay NULL (left untouched)."""
    def col(name: str, typ: str, present: bool) -> Column:
        return (F.col(name) if present else F.lit(None)).cast(typ).alias(name)

    return df.select(
        "uid", col("activity_seq", "bigint", activity), col("clicks", "bigint", activity),
        col("expend_time", "bigint", activity), col("last_click", "timestamp", activity),
        col("member_seq", "bigint", member), col("member_name", "string", member),
        col("memberLevel", "int", member),
        F.col(updated_at).cast("timestamp").alias("updated_at"),
    )


@dp.append_flow(target="dws.user_profile")
def profile_activity() -> DataFrame:
    """The user's counters as user_activity's changelog says: after images of inserts
    and updates; a deleted user (all its clicks removed) clears the group (NULLs, newer
    sequence), versioned by the changelog's ``_seq``."""
    changes = dp.read_stream("dws.user_activity").where(F.col("_op").isin("+I", "+U", "-D"))
    gone = F.col("_op") == "-D"
    cleared = changes.select(
        "uid", F.col("_seq").alias("activity_seq"),
        *[F.when(~gone, F.col(c)).alias(c) for c in ("clicks", "expend_time", "last_click")],
        F.when(gone, F.col("_commit_ts")).otherwise(F.col("last_click")).alias("changed_at"))
    return _profile(cleared, "changed_at", activity=True, member=False)


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
