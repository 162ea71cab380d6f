"""What the archiving JVM runs: a small pipeline of the clickstream's kinds in a private
home, so the archive holds the classes a real run loads before its first commits.

Kafka clicks (the embedded Tansu broker) → an append table partitioned by day with a
dead-letter table → a first-row table and an aggregation table with changelogs (MERGE,
delete files, bucketing), twice (the second pass merges into existing rows), then the
seed's ad-hoc queries and one maintenance pass. The catalog is the embedded Hive
metastore of the private home: the user's catalog is never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import yaml

from icetide.app.context import Context
from icetide.devkit.embedded.kinds import embedded_broker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.runtime.metastore.service import stop_metastore
from icetide.runtime.session import get_spark

log = logging.getLogger(__name__)

TOPIC = "clicks"
PIPELINE = ("name: warmup\ncatalog: lake\ndatabase: warm\n"
            "sources:\n  clicks: {type: kafka, topic: clicks}\n")
FLOWS = '''
from pyspark.sql import functions as F

from icetide import pipelines as dp
from icetide.sources import kafka

SCHEMA = ("cookieId string, expendTime int, webpageId int, uid string, productId string, "
          "updateTime bigint")


@dp.table(name="warm.clicks", partition_cols=["days(eventTime)"])
def clicks():
    read = kafka.read("clicks", schema=SCHEMA, required=["uid", "productId", "updateTime"],
                      dead_letter="warm.clicks_dlq")
    return read.withColumn("eventTime", F.timestamp_millis("updateTime"))


@dp.table(name="warm.product_user", primary_key=["productId", "uid"], partition_cols=[],
          merge_engine=dp.first_row("first_seen"), changelog=True)
def product_user():
    return (dp.read_stream("warm.clicks").groupBy("productId", "uid")
            .agg(F.min("eventTime").alias("first_seen")))


@dp.table(name="warm.user_activity", primary_key=["uid"], changelog=True,
          merge_engine=dp.aggregation(clicks="sum", last_click="max"))
def user_activity():
    return (dp.read_stream("warm.clicks").groupBy("uid")
            .agg(F.count(F.lit(1)).alias("clicks"), F.max("eventTime").alias("last_click")))
'''
QUERIES = (
    "SELECT * FROM lake.warm.clicks LIMIT 100",
    "SELECT productId, count(*) AS views, count(DISTINCT uid) AS uv FROM lake.warm.clicks "
    "GROUP BY productId ORDER BY views DESC",
)


def _settings_file(home: Path, bootstrap: str, java_options: str) -> Path:
    config = {
        "home": str(home),
        "kafka": {"bootstrap": bootstrap},
        "metastore": {"port": free_port()},
        "spark": {"conf": {"spark.driver.extraJavaOptions": java_options}},
    }
    path = home / "icetide.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _pipeline(home: Path) -> Path:
    folder = home / "pipeline"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(PIPELINE)
    (folder / "flows.py").write_text(FLOWS)
    return folder


def _passes(ctx: Context, bootstrap: str) -> None:
    for seed in (1, 2):
        produce_clicks(bootstrap, TOPIC, GenOptions(count=5000, bad_ratio=0.02, seed=seed))
        batches = ctx.run(once=True)
        log.info("archive workload pass %d: %d batches", seed,
                 sum(len(b) for b in batches.values()))
    for query in QUERIES:
        ctx.sql(query)
    ctx.maintain()


def run_workload(home: Path, jars: Sequence[Path], java_options: str) -> None:
    """The pipeline in ``home`` on a session whose class path has ``jars`` and whose
    driver JVM has ``java_options``; the session and the home's services stopped after
    (the JVM itself exits with this process)."""
    with embedded_broker("tansu", home / "broker") as broker:
        config = _settings_file(home, broker.bootstrap, java_options)
        ctx = Context.load(config, _pipeline(home))
        get_spark(ctx.settings, jars)  # the class path of the sessions it is built for
        try:
            _passes(ctx, broker.bootstrap)
        finally:
            ctx.spark.stop()
            stop_metastore(ctx.settings)
