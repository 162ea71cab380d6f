"""A flow's target evolves with its code at the next run (Iceberg schema and partition
evolution, in place), dry-run shows the plan first, and a change no table can follow in
place stops the run naming the column and the way out."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.engine.analyzer import spark_dry_run
from icetide.engine.evolve import read_stored
from icetide.engine.run import PipelineRun
from icetide.errors import SchemaChangeError
from icetide.pipelines import load_pipeline

pytestmark = pytest.mark.spark

V1 = '''
from icetide import pipelines as dp

@dp.table(name="ev.facts", partition_cols=["k"])
def facts():
    return dp.read_stream("ev.raw").selectExpr("cast(id as int) id", "k", "cast(x as float) x")

@dp.table(name="ev.latest", primary_key=["id"], changelog=True,
          merge_engine=dp.deduplicate(sequence_field="x"))
def latest():
    return dp.read_stream("ev.raw").selectExpr("id", "cast(x as decimal(10,2)) x")
'''

#: id and x widened, a column added in the middle, another partitioning; the key table's
#: value widened and a column added.
V2 = '''
from icetide import pipelines as dp

@dp.table(name="ev.facts", partition_cols=["bucket(4, k)"])
def facts():
    return dp.read_stream("ev.raw").selectExpr("id", "upper(k) note", "k", "cast(x as double) x")

@dp.table(name="ev.latest", primary_key=["id"], changelog=True,
          merge_engine=dp.deduplicate(sequence_field="x"))
def latest():
    return dp.read_stream("ev.raw").selectExpr("id", "cast(x as decimal(12,2)) x", "k")
'''


def _raw(spark: SparkSession, start: int) -> None:
    spark.range(start, start + 10).selectExpr(
        "id", "concat('k', id % 3) k", "id * 1.5d x").writeTo("lake.ev.raw").append()


def _run(spark: SparkSession, settings: Settings, folder: Path, code: str) -> None:
    (folder / "flows.py").write_text(code)
    with PipelineRun(spark, settings, load_pipeline(folder)) as run:
        run.run_once()


def _files(spark: SparkSession) -> set[str]:
    return {r.file_path for r in spark.sql("SELECT file_path FROM lake.ev.facts.files").collect()}


def _types(spark: SparkSession, table: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}


@pytest.fixture
def folder(spark: SparkSession, tmp_path: Path, icetide_settings: Settings) -> Path:
    spark.sql("DROP TABLE IF EXISTS lake.ev.raw")
    for name in ("facts", "latest", "latest__changelog"):
        spark.sql(f"DROP TABLE IF EXISTS lake.ev.{name}")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ev")
    spark.sql("CREATE TABLE lake.ev.raw (id bigint, k string, x double) USING iceberg")
    (tmp_path / "icetide-pipeline.yml").write_text("name: ev\ncatalog: lake\n")
    _raw(spark, 0)
    _run(spark, icetide_settings, tmp_path, V1)
    return tmp_path


def test_added_and_widened_columns_and_new_partitioning_evolve_in_place(
        spark: SparkSession, icetide_settings: Settings, folder: Path) -> None:
    files_before = _files(spark)
    (folder / "flows.py").write_text(V2)
    report = spark_dry_run(spark, icetide_settings, load_pipeline(folder))
    assert report.ok, report.format()
    assert sorted(p.message.split(": ", 1)[1] for p in report.changes) == [
        "table ev.facts: add column note string",
        "table ev.facts: add partition field bucket(4, `k`)",
        "table ev.facts: drop partition field `k`",
        "table ev.facts: widen column id from int to bigint",
        "table ev.facts: widen column x from float to double",
        "table ev.latest: add column k string",
        "table ev.latest: widen column x from decimal(10,2) to decimal(12,2)",
    ]
    assert "7 change(s) at the next run" in report.format()
    assert _types(spark, "lake.ev.facts") == {"id": "int", "k": "string", "x": "float"}

    _raw(spark, 10)
    _run(spark, icetide_settings, folder, V2)

    assert _types(spark, "lake.ev.facts") == {
        "id": "bigint", "k": "string", "x": "double", "note": "string"}
    assert read_stored(spark, "lake.ev.facts").partitions == ("bucket(4, `k`)",)
    rows = spark.sql("SELECT count(*) n, count(note) noted FROM lake.ev.facts").first()
    assert (rows.n, rows.noted) == (20, 10)  # old rows kept, read null in the new column
    # no rewrite: the first run's files are still the table's
    assert files_before < _files(spark)
    assert _types(spark, "lake.ev.latest") == {
        "id": "bigint", "x": "decimal(12,2)", "k": "string"}
    image = "struct<id:bigint,x:decimal(12,2),k:string>"
    changelog = _types(spark, "lake.ev.latest__changelog")
    assert (changelog["before"], changelog["after"]) == (image, image)
    assert spark.sql("SELECT count(*) FROM lake.ev.latest__changelog "
                     "WHERE after.k IS NOT NULL").first()[0] == 10
    assert not spark_dry_run(spark, icetide_settings, load_pipeline(folder)).changes


@pytest.mark.parametrize(("edit", "message"), [
    (('"k", "cast(x as float) x")', '"k")'),
     r"table ev.facts: column 'x' is in the table but the flow no longer produces it"),
    (("cast(id as int) id", "cast(id as smallint) id"),
     r"table ev.facts: column 'id' is int in the table but the flow produces smallint"),
    (('primary_key=["id"]', 'primary_key=["id", "x"]'),
     r"table ev.latest: primary key \['id', 'x'\] but the table's is \['id'\]"),
])
def test_a_change_no_table_follows_in_place_stops_naming_column_and_way_out(
        spark: SparkSession, icetide_settings: Settings, folder: Path,
        edit: tuple[str, str], message: str) -> None:
    code = V1.replace(*edit)
    (folder / "flows.py").write_text(code)
    [error] = spark_dry_run(spark, icetide_settings, load_pipeline(folder)).errors
    assert error.code == "schema_mismatch"
    assert "icetide table refresh" in error.message
    with pytest.raises(SchemaChangeError, match=message + r".*icetide table refresh ev\."):
        _run(spark, icetide_settings, folder, code)
    assert _types(spark, "lake.ev.facts") == {"id": "int", "k": "string", "x": "float"}
    assert _types(spark, "lake.ev.latest") == {"id": "bigint", "x": "decimal(10,2)"}
