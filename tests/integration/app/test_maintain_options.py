"""``maintenance.max_manifests`` and ``maintenance.metadata_versions`` change what a
maintenance pass does (docs/options.md), through ``Context.maintain``."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.config import Settings
from icetide.runtime.catalogs import pyiceberg_catalog

pytestmark = pytest.mark.spark


def _ctx(spark: SparkSession, settings: Settings, **maintenance: object) -> Context:
    policy = settings.maintenance.model_copy(update={"min_input_files": 100, **maintenance})
    ctx = Context(settings.model_copy(update={"maintenance": policy}))
    ctx._spark = spark
    return ctx


def test_max_manifests_and_metadata_versions_steer_a_pass(
        spark: SparkSession, icetide_settings: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.mopt")
    spark.sql("CREATE TABLE lake.mopt.t (id bigint) USING iceberg")
    for i in range(4):  # a manifest per append
        spark.sql(f"INSERT INTO lake.mopt.t VALUES ({i})")
    # at most 20 manifests (the default): four are left alone
    kept = _ctx(spark, icetide_settings).maintain(["mopt.t"])[0]
    assert kept.actions.manifests is None and kept.before.manifests == 4
    # at most 2: the pass rewrites them, and keeps 3 old metadata.json files
    report = _ctx(spark, icetide_settings, max_manifests=2,
                  metadata_versions=3).maintain(["mopt.t"])[0]
    assert report.actions.manifests is not None
    assert report.after is not None and report.after.manifests < 4
    table = pyiceberg_catalog(icetide_settings).load_table(("mopt", "t"))
    assert table.properties["write.metadata.previous-versions-max"] == "3"
