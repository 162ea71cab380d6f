"""Dimensions: MySQL ``user_db.products`` / ``user_db.user_member`` → ``dim_db.*`` by CDC.

Seed 001 step 3 and seed 004: the business tables are copied with a consistent snapshot,
then followed through the binlog; updates and deletes land as upserts (MERGE) in
primary-key Iceberg tables. ``user_member`` keeps a changelog, which
``dws.user_profile`` reads (layers/dws.py) so member changes reach the profile without a
stream-stream join.

Declared only when the pipeline's ``clickstream.dims`` is ``cdc`` (icetide-pipeline.yml);
with ``seed`` (the default) the same tables come from ``icetide seed dims``.

Seed 002 keeps the same member table also as an Apache Hudi table in the one catalog:
with ``clickstream.hudi`` ``true`` (and a session with Hudi: ``spark.hudi: true``),
``dim_db.user_member_hudi`` (merge-on-read) follows ``user_db.user_member`` beside the
Iceberg ``dim_db.user_member`` (docs/cdc.md, Hudi targets).
"""

from __future__ import annotations

from icetide import pipelines as dp
from icetide.errors import PipelineError
from icetide.sources import mysql

DIMS = dp.configuration("clickstream.dims", "seed")
if DIMS not in ("seed", "cdc"):
    raise PipelineError(f"configuration clickstream.dims={DIMS!r}: use 'seed' "
                        "(`icetide seed dims`) or 'cdc' (MySQL source `shop`)")
HUDI = dp.configuration("clickstream.hudi", "false")
if HUDI not in ("true", "false") or (HUDI == "true" and DIMS != "cdc"):
    raise PipelineError(f"configuration clickstream.hudi={HUDI!r}: use 'false', or 'true' "
                        "with clickstream.dims=cdc (the Hudi table is fed by CDC)")
if DIMS == "cdc":
    dp.create_streaming_table(
        "dim_db.products", comment="user_db.products (CDC)", primary_key=["productId"],
    )
    dp.create_streaming_table(
        "dim_db.user_member", comment="user_db.user_member (CDC)", primary_key=["userid"],
        changelog=True,
    )
    dp.create_auto_cdc_flow(
        target="dim_db.products", source=mysql.binlog("shop", table="user_db.products"),
        keys=["productId"], sequence_by="_pos",
    )
    dp.create_auto_cdc_flow(
        target="dim_db.user_member", source=mysql.binlog("shop", table="user_db.user_member"),
        keys=["userid"], sequence_by="_pos",
    )
if HUDI == "true":
    dp.create_streaming_table(
        "dim_db.user_member_hudi", comment="user_db.user_member (CDC, Hudi)",
        primary_key=["userid"], format="hudi",
    )
    dp.create_auto_cdc_flow(
        target="dim_db.user_member_hudi",
        source=mysql.binlog("shop", table="user_db.user_member"),
        keys=["userid"], sequence_by="_pos",
    )
