"""``create_auto_cdc_flow``'s ``keys``, ``sequence_by`` and ``name`` (docs/options.md):
keys must be the upstream primary key, the order is the source's position, and the flow
is known by its name (its marker in the target)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from cdc_pipeline_helpers import create_items, unique, write_pipeline
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.engine.run import PipelineRun
from icetide.errors import PipelineError
from icetide.lake import commit
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.items", primary_key=["id"])
dp.create_auto_cdc_flow(target="{lake_db}.items", source=mysql.binlog("shop", table="{table}"),
                        keys={keys}, sequence_by="{sequence_by}", name="items_cdc")
'''


def _run(mariadb: MariaDBInfo, spark: SparkSession, settings: Settings, folder: Path,
         lake_db: str, table: str, keys: str, sequence_by: str) -> None:
    code = FLOWS.format(lake_db=lake_db, table=table, keys=keys, sequence_by=sequence_by)
    with PipelineRun(spark, settings, load_pipeline(
            write_pipeline(folder, mariadb, lake_db, code))) as run:
        run.run_once()


def _items(mariadb: MariaDBInfo) -> str:
    """A new database holding ``items`` (3 rows): its qualified name."""
    db = unique("shop")
    with contextlib.closing(mariadb.connect()) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db}`")
    return create_items(mariadb, db, 3)


def test_keys_sequence_by_and_name_of_a_cdc_flow(
        mariadb: MariaDBInfo, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    lake_db, table = unique("dim"), _items(mariadb)
    with pytest.raises(PipelineError, match=r"keys=\['name'\] must be the upstream primary "
                                            r"key \(id\)"):
        _run(mariadb, spark, icetide_settings, tmp_path / "k", lake_db, table, "['name']",
             "_pos")
    with pytest.raises(PipelineError, match=r"sequence_by='updated', but a CDC flow is "
                                            r"ordered by its source position"):
        _run(mariadb, spark, icetide_settings, tmp_path / "s", lake_db, table, "['id']",
             "updated")
    _run(mariadb, spark, icetide_settings, tmp_path / "ok", lake_db, table, "['id']", "_pos")
    ident = f"lake.{lake_db}.items"
    assert spark.table(ident).count() == 3
    assert commit.last_marker(spark, ident, f"{lake_db}.items_cdc") is not None  # by its name
