"""A compaction run by hand (``icetide call system.rewrite_data_files``) counts as the
table's last maintenance: "last commit" and "maintained" then name the same commit."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from icetide.app.status import collect_status
from icetide.config import Settings
from icetide.runtime.catalogs import pyiceberg_catalog

pytestmark = pytest.mark.spark


def test_a_manual_compaction_is_the_last_maintenance(
        spark: SparkSession, icetide_settings: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.st_upkeep")
    spark.sql("CREATE TABLE lake.st_upkeep.t (id bigint) USING iceberg")
    for value in (1, 2):
        spark.sql(f"INSERT INTO lake.st_upkeep.t VALUES ({value})")
    catalog = pyiceberg_catalog(icetide_settings)
    [before] = collect_status(catalog, ["st_upkeep.t"])
    assert before.storage is not None and before.storage.last_maintenance_ms is None

    spark.sql("CALL lake.system.rewrite_data_files(table => 'st_upkeep.t', "
              "options => map('min-input-files', '2'))")
    [after] = collect_status(catalog, ["st_upkeep.t"])
    assert after.storage is not None and after.storage.data_files == 1
    assert after.last_commit_ms is not None
    assert after.storage.last_maintenance_ms == after.last_commit_ms
