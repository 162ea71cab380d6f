"""``Context.maintain``/``call``/``status`` and the CLI on a real lake."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.config import Settings
from icetide.errors import MaintenanceError
from icetide.tables.procedures import PROCEDURES

pytestmark = pytest.mark.spark


def test_procedure_table_matches_the_iceberg_runtime(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    procs = jvm.org.apache.iceberg.spark.procedures.SparkProcedures
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog("lake")
    found = {}
    for name in procs.names():
        params = procs.newBuilder(name).withTableCatalog(catalog).build().parameters()
        found[str(name)] = (tuple(str(p.name()) for p in params if p.required()),
                            tuple(str(p.name()) for p in params if not p.required()))
    assert found == PROCEDURES


def _ctx(spark: SparkSession, settings: Settings) -> Context:
    ctx = Context(settings)
    ctx._spark = spark
    return ctx


def test_call_maintain_and_status(spark: SparkSession, icetide_settings: Settings) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ctxm")
    spark.sql("CREATE TABLE lake.ctxm.t (id bigint, tag string) USING iceberg")
    for i in range(6):
        spark.sql(f"INSERT INTO lake.ctxm.t VALUES ({i}, 'a'), ({i + 10}, 'b')")
    ctx = _ctx(spark, icetide_settings)
    result = ctx.call("system.rewrite_data_files(table => 'ctxm.t', strategy => 'sort', "
                      "sort_order => 'zorder(id, tag)')")
    assert result.rows[0][0] == 12 and result.rows[0][1] == 1  # rewritten, added files
    with pytest.raises(MaintenanceError, match="unknown argument 'tabel'"):
        ctx.sql("CALL lake.system.expire_snapshots(tabel => 'ctxm.t')")
    reports = ctx.maintain(["ctxm.t"])
    assert reports[0].after is not None and reports[0].after.data_files == 1
    row = next(r for r in ctx.status(lag=False) if r.table == "ctxm.t")
    assert row.storage is not None and row.storage.data_files == 1
    assert row.storage.last_maintenance_ms is not None
    assert row.storage.snapshots == reports[0].after.snapshots


def test_cli_refuses_unknown_procedures(icetide_settings: Settings) -> None:
    from icetide.cli.main import cli

    env = {"ICETIDE_HOME": str(icetide_settings.home), "ICETIDE_CATALOG__TYPE": "hadoop"}
    out = CliRunner(env=env).invoke(cli, ["call", "system.compact(table => 'a.b')"])
    assert out.exit_code == 2 and "unknown procedure 'compact'" in out.output  # refused
    help_text = CliRunner().invoke(cli, ["maintain", "--help"]).output
    assert "--dry-run" in help_text and "--format" in help_text
