"""Keywords of the declarative API that change what a run does (docs/options.md): a
table's ``comment``, ``expectations=``, and a declared ``schema`` the flows' output must
match."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.run import PipelineRun
from icetide.errors import PipelineError
from icetide.pipelines import load_pipeline
from icetide.runtime.catalogs import pyiceberg_catalog
from tests.pipelines import pipeline_folder

pytestmark = pytest.mark.spark

FLOWS = '''
from icetide import pipelines as dp
from icetide.pipelines.spec import Expectation


def positive():  # what a temporary view would be: a function the flows call
    return dp.read_stream("opt.raw").where("n > 0")


@dp.table(name="opt.kept", comment="rows with a positive n",
          schema="id BIGINT, n INT",
          expectations=[Expectation("small", "n < 100", "drop")])
def kept():
    return positive().select("id", "n")
'''

MISMATCH = '''
from icetide import pipelines as dp

@dp.table(name="opt.typed", schema="id BIGINT, n BIGINT")
def typed():
    return dp.read_stream("opt.raw").select("id", "n")
'''


def _raw(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.opt")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.opt.raw (id bigint, n int) USING iceberg")
    spark.sql("INSERT INTO lake.opt.raw VALUES (1, -5), (2, 7), (3, 250), (4, 42)")


def test_comment_expectations_and_schema_shape_the_table(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _raw(spark)
    with PipelineRun(spark, icetide_settings, load_pipeline(pipeline_folder(tmp_path, "opt", FLOWS))
                     ) as run:
        run.run_once()
    # the query keeps n > 0, the expectation drops n >= 100: only 2 and 4 are kept
    assert sorted(r.id for r in spark.table("lake.opt.kept").collect()) == [2, 4]
    kept = pyiceberg_catalog(icetide_settings).load_table(("opt", "kept"))
    assert kept.properties["comment"] == "rows with a positive n"
    assert [(f.name, f.dataType.simpleString()) for f in spark.table("lake.opt.kept").schema] \
        == [("id", "bigint"), ("n", "int")]


def test_a_flow_whose_output_differs_from_the_declared_schema_is_refused(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    _raw(spark)
    graph = load_pipeline(pipeline_folder(tmp_path, "mismatch", MISMATCH))
    with pytest.raises(PipelineError, match=r"opt\.typed.*column n is declared bigint but the "
                                            r"query produces int \(cast it\)"), \
            PipelineRun(spark, icetide_settings, graph) as run:
        run.run_once()
    assert not spark.catalog.tableExists("lake.opt.typed")  # refused before it is created
