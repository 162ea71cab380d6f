"""ODS → DWD → DWS → ADS of examples/clickstream, checked against a recomputation.

Real broker, Spark and Iceberg: clicks go through the seed pipeline (Kafka → ODS), then
the layers pipeline runs incrementally three times — a first load, a load after a price
and a member-level change, and a replay that must change nothing. After each run every
layer equals a from-scratch computation over ODS and the dimensions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import KafkaConfig, Settings
from icetide.devkit.demo.reconcile import all_ok, reconcile_layers
from icetide.engine.run import PipelineRun
from icetide.lake.commit import load_table
from icetide.pipelines import load_pipeline
from tests.integration.layers.layers_helpers import (
    Dimensions,
    click_events,
    copy_pipeline,
    produce,
    register_catalog,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

BASE_MS = 1_763_700_000_000
LAYER_TABLES = ("dwd.click_wide", "dws.product_user", "dws.product_views",
                "dws.user_activity", "dws.user_profile", "ads.daily_product_report")


class Lake:
    def __init__(self, spark: SparkSession, settings: Settings, cat: str,
                 pipeline: Path, bootstrap: str, topic: str) -> None:
        self.spark, self.settings, self.cat = spark, settings, cat
        self.pipeline = load_pipeline(pipeline)
        self.bootstrap, self.topic = bootstrap, topic
        self.dims = Dimensions(spark, cat)

    def rows(self, sql: str) -> set[tuple[object, ...]]:
        return {tuple(r) for r in self.spark.sql(sql.replace("{c}", self.cat)).collect()}

    def run(self) -> dict[str, int]:
        done = PipelineRun(self.spark, self.settings, self.pipeline).run_once()
        return {name: sum(r.rows for r in results) for name, results in done.items()
                if results and name != "ods_behavior.clickevent"}

    def snapshots(self) -> dict[str, int]:
        return {t: int(load_table(self.spark, f"{self.cat}.{t}").currentSnapshot().snapshotId())
                for t in LAYER_TABLES}


@pytest.fixture()
def lake(spark: SparkSession, icetide_settings: Settings, broker: str,
         kafka_topic: object, tmp_path: Path) -> Iterator[Lake]:
    cat = f"lay_{uuid.uuid4().hex[:6]}"
    register_catalog(spark, cat, tmp_path / "warehouse")
    topic = kafka_topic(partitions=2)  # type: ignore[operator]
    pipeline = copy_pipeline(tmp_path, cat, topic)
    settings = icetide_settings.model_copy(update={"kafka": KafkaConfig(bootstrap=broker)})
    yield Lake(spark, settings, cat, pipeline, broker, topic)


def check_report(lake: Lake) -> None:
    snap = load_table(lake.spark, f"{lake.cat}.ads.daily_product_report").currentSnapshot()
    summary = dict(snap.summary())
    assert snap.operation() == "overwrite"
    assert summary["icetide.flow"] == "ads.daily_product_report"
    dwd_id = load_table(lake.spark, f"{lake.cat}.dwd.click_wide").currentSnapshot().snapshotId()
    assert f'"{lake.cat}.dwd.click_wide":{dwd_id}' in summary["icetide.pos"]


def check_all(lake: Lake) -> None:
    checks = reconcile_layers(lake.spark, lake.cat)
    assert all_ok(checks), "\n".join(c.line() for c in checks)
    check_report(lake)


def test_layers_incremental_against_recompute(lake: Lake) -> None:
    lake.dims.seed(datetime(2026, 1, 1))
    produce(lake.bootstrap, lake.topic, click_events(0, 120, BASE_MS))
    first = lake.run()
    assert first["dwd.click_wide"] == 120
    check_all(lake)

    # A price change shows in the enrichment of the next events; a level change in the profile.
    lake.dims.set_price("1", Decimal("99.5"), datetime(2026, 1, 2))
    lake.dims.set_level("10952", 7, datetime(2026, 1, 2))
    produce(lake.bootstrap, lake.topic, click_events(120, 60, BASE_MS))
    lake.run()
    check_all(lake)
    second = BASE_MS + 120_000  # updateTime of the first event of the second load
    prices = lake.rows(f"SELECT updateTime >= {second}, product_price "
                       "FROM {c}.dwd.click_wide WHERE productId = '1' GROUP BY 1, 2")
    assert prices == {(False, Decimal("11.1100")), (True, Decimal("99.5000"))}
    assert lake.rows("SELECT product_price FROM {c}.dws.product_views WHERE productId = '1'") == {
        (Decimal("99.5000"),)}
    assert lake.rows("SELECT memberLevel FROM {c}.dws.user_profile WHERE uid = '10952'") == {(7,)}

    # A replay finds nothing new: no layer commits anything.
    before = lake.snapshots()
    assert lake.run() == {}
    assert lake.snapshots() == before
    check_all(lake)
