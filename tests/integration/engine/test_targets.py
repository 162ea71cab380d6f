"""A flow target's ``cluster_by``: the table's sort order, so written files come out sorted,
compaction sorts by it, and ``describe`` shows it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from icetide.cli.query_cmds import describe
from icetide.config import MaintenanceConfig, Settings
from icetide.engine.run import PipelineRun
from icetide.engine.targets import ensure_table
from icetide.errors import PipelineError
from icetide.maintainer import Maintainer
from icetide.pipelines import load_pipeline
from icetide.pipelines.spec import TableSpec
from icetide.query.catalog_info import describe as describe_table
from icetide.runtime.catalogs import pyiceberg_catalog

pytestmark = pytest.mark.spark

FLOWS = '''
from icetide import pipelines as dp

@dp.table(name="ct.events", cluster_by=["k"])
def events():
    return dp.read_stream("ct.raw")
'''


def _raw(spark: SparkSession, start: int) -> None:
    """1,000 rows whose ``k`` comes in no order, written by two tasks."""
    spark.range(start, start + 1_000).selectExpr(
        "id", "concat('k', lpad(cast((id * 7919) % 1000 as string), 4, '0')) k",
    ).repartition(2).writeTo("lake.ct.raw").append()


def _files(spark: SparkSession) -> list[tuple[str, str, str]]:
    return [(r.file_path, r.lo, r.hi) for r in spark.sql(
        "SELECT file_path, readable_metrics.k.lower_bound lo, readable_metrics.k.upper_bound hi "
        "FROM lake.ct.events.files").collect()]


def _sorted_within(spark: SparkSession, path: str) -> bool:
    keys = [r.k for r in spark.read.parquet(path).select("k").collect()]
    return len(keys) > 1 and keys == sorted(keys)


def test_cluster_by_sorts_every_file_compaction_and_describe(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ct")
    spark.sql("CREATE TABLE lake.ct.raw (id bigint, k string) USING iceberg")
    folder = tmp_path / "clustered"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text("name: clustered\ncatalog: lake\n")
    (folder / "flows.py").write_text(FLOWS)
    for start in (0, 1_000):  # two batches
        _raw(spark, start)
        with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
            run.run_once()

    files = _files(spark)
    assert len(files) >= 2  # a file per batch at least
    assert all(_sorted_within(spark, path) for path, _, _ in files)
    props = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES lake.ct.events").collect()}
    assert props["sort-order"] == "k ASC NULLS FIRST"
    assert props["write.distribution-mode"] == "none"  # locally ordered: no range shuffle
    metadata = spark.sql("SELECT count(*) FROM lake.ct.events.metadata_log_entries").first()

    # the second run found the order in force: no ALTER, no new metadata file for it
    ensure_table(spark, "lake.ct.events", TableSpec(name="ct.events", cluster_by=("k",)),
                 [("id", "bigint"), ("k", "string")])
    assert spark.sql("SELECT count(*) FROM lake.ct.events.metadata_log_entries").first() \
        == metadata

    policy = MaintenanceConfig(min_input_files=2, target_file_size=64 * 1024 * 1024)
    report = Maintainer(spark, icetide_settings.model_copy(update={"maintenance": policy})
                        ).run("ct.events", orphans=False)
    assert report.actions.compaction.strategy == "sort"  # by the table's own order
    [(path, lo, hi)] = _files(spark)
    assert _sorted_within(spark, path) and (lo, hi) == ("k0000", "k0999")
    assert spark.table("lake.ct.events").count() == 2_000

    info = describe_table(("ct", "events"), pyiceberg_catalog(icetide_settings).load_table(
        ("ct", "events")))
    assert info["sort_order"] == ["k ASC NULLS FIRST"]
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json",
                                                                 exclude_none=True)))
    shown = CliRunner().invoke(describe, ["ct.events", "--config", str(config)])
    assert shown.exit_code == 0, shown.output
    assert "sort order (cluster_by): k ASC NULLS FIRST; write distribution: none" in shown.output


def test_a_cluster_by_column_the_table_lacks_is_refused_by_name(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ct")
    with pytest.raises(PipelineError, match=r"cluster_by column 'kk' is not one of its columns "
                                            r"\(id, k\): fix the name"):
        ensure_table(spark, "lake.ct.typo", TableSpec(name="ct.typo", cluster_by=("kk",)),
                     [("id", "bigint"), ("k", "string")])
