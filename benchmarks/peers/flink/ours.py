"""icetide's side of the GROUP BY and CDC hops: the pipelines it runs, as ``icetide run``
would run them.

Each hop gets a pipeline folder of its own in the run's temporary directory, made of the
example's own flow files (``examples/clickstream``, copied as they are) and the
benchmark's spec:

* **GROUP BY**: ``clickevent.py`` (the ODS flow the ODS hop measures, same name, so it
  resumes at its committed position) and :data:`PRODUCT_CLICKS`, one flow computing the
  seed's statistic from ODS. That flow, not ``dws.product_views``, is the counterpart:
  ``product_views`` is fed from ``dwd.click_wide`` and adds an exact UV through
  ``dws.product_user``, three flows of work for a different statistic, while the seed's
  Flink job reads the ODS table and counts. ``dws.product_clicks`` is built like
  ``product_views`` (primary key ``productId``, the aggregation merge engine with
  ``views = sum`` and ``_seq = max``, the newest click counted, which the engine orders a
  product's rows by; unpartitioned, copy-on-write): each batch reads the ODS rows committed
  since the flow's position, counts per product and folds the counts into the table in
  one MERGE, where Flink keeps the counts in its state and upserts the changed rows.
* **CDC**: ``dims.py`` with ``clickstream.dims = cdc`` (only its ``dim_db.user_member``
  flow runs): snapshot and binlog of ``user_db.user_member`` into the primary-key table
  ``dim_db.user_member`` with its changelog, as ``icetide demo`` runs it.

Both run under the DAG scheduler (:meth:`PipelineRun.run_forever`): a flow reading a table
of the pipeline starts right after that table's flow commits. Each table's freshness
target is the hop's commit interval (Flink's checkpoint): with it the scheduler keeps the
flows continuous, a batch at most every trigger interval, as Flink commits once a
checkpoint. The example's 10 s targets would let it space ODS batches out (a batch every
~6 s meets 10 s with fewer batches), and an untargeted table, as the example's
dimensions are, is spaced by four times its batch time: other commit intervals than
the peer's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from icetide.devkit.demo.shop import Shop

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "clickstream"
STATS = "dws.product_clicks"
STATS_FLOW = "dws.count_clicks"
MEMBERS = "dim_db.user_member"

PRODUCT_CLICKS = '''\
"""The seed's streaming statistic: count(uid) per product, with its name and price."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from icetide import pipelines as dp

dp.create_streaming_table(
    "dws.product_clicks",
    comment="Clicks per product (the seed's count(uid) group by productId, name, price)",
    table_properties={f"write.{op}.mode": "copy-on-write" for op in ("merge", "update", "delete")},
    primary_key=["productId"],
    partition_cols=[],
    merge_engine=dp.aggregation(views="sum", _seq="max"),
)


@dp.append_flow(target="dws.product_clicks")
def count_clicks() -> DataFrame:
    clicks = dp.read_stream("ods_behavior.clickevent")
    # _seq: the newest click counted, the order the engine keeps name and price by
    return clicks.groupBy("productId", "name", "product_price").agg(
        F.count("uid").alias("views"), F.max("updateTime").alias("_seq"))
'''


def _spec(name: str, trigger_s: float, body: str) -> str:
    return (f"name: {name}\ncatalog: lake\ndatabase: ods_behavior\n"
            'libraries:\n  - glob:\n      include: "*.py"\n'
            f"defaults:\n  trigger_interval: {trigger_s:g}s\n{body}")


def _targets(tables: tuple[str, ...], seconds: float) -> str:
    return "tables:\n" + "".join(f"  {t}: {{freshness: {seconds:g} seconds}}\n" for t in tables)


def groupby_pipeline(folder: Path, trigger_s: float) -> Path:
    """The ODS flow and the statistic's flow, each table's target its commit interval."""
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLE / "clickevent.py", folder / "clickevent.py")
    (folder / "product_clicks.py").write_text(PRODUCT_CLICKS)
    (folder / "icetide-pipeline.yml").write_text(_spec("clickstream", trigger_s, (
        "sources:\n  clicks: {type: kafka, topic: clicktopic}\n"
        + _targets(("ods_behavior.clickevent", STATS), trigger_s))))
    return folder


def cdc_pipeline(folder: Path, trigger_s: float, shop: Shop) -> Path:
    """The example's CDC dimensions on ``shop`` (its password in ``$SHOP_PASSWORD``)."""
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLE / "dims.py", folder / "dims.py")
    shop.pipeline_env()  # sets $SHOP_PASSWORD in this process
    info = shop.info
    (folder / "icetide-pipeline.yml").write_text(_spec("clickstream", trigger_s, (
        "configuration:\n  clickstream.dims: cdc\n  clickstream.hudi: 'false'\n"
        f"sources:\n  shop: {{type: mysql, host: {info.host}, port: {info.port}, "
        f"user: {info.cdc_user}, password_env: SHOP_PASSWORD}}\n"
        + _targets((MEMBERS,), trigger_s))))
    return folder
