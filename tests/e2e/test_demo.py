"""``icetide demo --duration 60``: the whole seed system, then the lake reconciles.

The demo runs as users run it (a subprocess of the CLI, private ICETIDE_HOME, its own
MariaDB, broker and Spark) for 60 s and writes ``--report`` (fixture ``demo_lake``, whose
lake test_trino reads too). Asserted:

* exit 0, and every reconciliation check of the demo passed: ODS rows = valid events
  produced, DLQ rows = malformed events produced, dim_db.* = MariaDB row for row,
  DWD/DWS/ADS = a recomputation over ODS (``icetide.devkit.demo.reconcile``);
* independently of the demo's own checks (no JVM: table metadata and pyiceberg scans):
  ODS/DLQ live rows equal the generator's counts, and after restarting the demo's
  MariaDB on its persisted data dir, dim_db.products / user_member equal user_db row for
  row — and show the business updates (changed prices, member changes in the changelog);
* other engines by name: pyiceberg, through the demo's catalog service, lists every table
  of the lake and reads the same row count and integer sums as Spark (deletes applied);
* the warm-up: the demo says it warms up before its clock starts, every layer with a
  freshness target committed before the measured window opened, and each verdict is
  the worst commit of that window alone (recomputed from the tables' snapshots, the
  warm-up's commits left out); ``icetide status`` afterwards judges the stopped tables
  over their last minute of commits and says so. No timing figure is asserted (the
  machine is shared): the mechanism is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icetide.app.status import read_markers
from icetide.app.window import WINDOW_S, freshness_window
from icetide.config import load_settings
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB
from icetide.devkit.gen.seed_rows import PRODUCTS
from icetide.pipelines.freshness import freshness_status
from icetide.query.catalog_info import all_tables, live_rows
from icetide.runtime.catalogs import ReadCatalog, pyiceberg_catalog
from tests.e2e.demo_lake import DemoLake

INTEGRAL = ("bigint", "int", "smallint", "tinyint")

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.mariadb, pytest.mark.slow]


def _rows(catalog: ReadCatalog, name: str) -> int:
    table = catalog.load_table(tuple(name.split(".")))
    rows = live_rows(table.current_snapshot())
    assert rows is not None, f"{name} has no row count in its snapshot summary"
    return rows


def _lake(catalog: ReadCatalog, name: str, columns: list[str]) -> set[tuple[Any, ...]]:
    arrow = catalog.load_table(tuple(name.split("."))).scan().to_arrow()
    return {tuple(row[c] for c in columns) for row in arrow.select(columns).to_pylist()}


def _mariadb(home: Path, *queries: str) -> list[set[tuple[Any, ...]]]:
    """Rows of each query on the demo's MariaDB, restarted on its persisted data dir."""
    out = []
    with EmbeddedMariaDB(home / "mariadb") as info:
        conn = info.connect("app", "user_db")
        try:
            for sql in queries:
                with conn.cursor() as cur:
                    cur.execute(sql)
                    out.append({tuple(row) for row in cur.fetchall()})
        finally:
            conn.close()
    return out


def test_demo_60s_reconciles(demo_lake: DemoLake, spark: SparkSession) -> None:
    home, report = demo_lake.home, demo_lake.report

    # the demo's own reconciliation (Spark, against MariaDB before it stopped)
    checks = report["checks"]
    bad = [c for c in checks if not c["ok"]]
    assert report["ok"] and checks and not bad, bad
    names = " | ".join(c["name"] for c in checks)
    for expected in ("ODS rows", "DLQ rows", "dim_db.products", "dim_db.user_member",
                     "dwd.click_wide", "dws.product_views", "dws.user_profile",
                     "ads.daily_product_report", "erase of user", "correction of product"):
        assert expected in names
    assert len(checks) >= 13
    # the erase and the correction happened mid-run and reached every layer (checks above)
    edits = {e["name"].split(" ")[0]: e for e in report["edits"]}
    assert edits["erase"]["rows"] > 0 and edits["correction"]["rows"] > 0
    erased = edits["erase"]["rows"]
    clicks, business = report["clicks"], report["business"]
    assert report["dims"] == "cdc" and report["mariadb"]["seeded"] is True
    assert clicks["valid"] > 10_000 and clicks["malformed"] > 0
    assert clicks["delivery_errors"] == 0
    assert business is not None and business["total"] > 0, business

    # independently: ODS / DLQ from table metadata, dims vs MariaDB via pyiceberg
    # by name, through the demo's metastore (still serving after the demo ended)
    catalog = pyiceberg_catalog(load_settings(None, environ=demo_lake.env()))
    assert _rows(catalog, "ods_behavior.clickevent") == clicks["valid"] - erased
    assert _rows(catalog, "ods_behavior.clickevent_dlq") == clicks["malformed"]
    products = _lake(catalog, "dim_db.products", ["productId", "product_price"])
    members = _lake(catalog, "dim_db.user_member", ["userid", "name", "memberLevel"])
    assert [products, members] == _mariadb(
        home, "SELECT productId, product_price FROM products",
        "SELECT userid, name, memberLevel FROM user_member")
    # the business updates reached the lake: prices moved off the seed's, members changed
    seed_prices = {(p[0], Decimal(p[3]).quantize(Decimal("0.0001"))) for p in PRODUCTS}
    if business["counts"].get("price"):
        assert products != seed_prices
    changes = _lake(catalog, "dim_db.user_member__changelog", ["_op"])
    assert {("+I",), ("+U",)} <= changes
    assert _same_through_both_engines(spark, catalog, demo_lake.metastore_port) >= 10


def _same_through_both_engines(spark: SparkSession, catalog: ReadCatalog, port: int) -> int:
    """Every table: pyiceberg's row count and integer-column sums equal Spark's."""
    spark.conf.set("spark.sql.catalog.demo", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.demo.type", "hive")
    spark.conf.set("spark.sql.catalog.demo.uri", f"thrift://127.0.0.1:{port}")
    tables = all_tables(catalog)
    for ident in tables:
        df = spark.table("demo." + ".".join(f"`{p}`" for p in ident))
        ints = [f.name for f in df.schema.fields if f.dataType.simpleString() in INTEGRAL]
        want = df.selectExpr("count(*)", *[f"sum(`{c}`)" for c in ints]).collect()[0]
        arrow = catalog.load_table(ident).scan().to_arrow()
        got = [arrow.num_rows, *[sum(v for v in arrow.column(c).to_pylist() if v is not None)
                                 if arrow.num_rows else None for c in ints]]
        assert got == [want[0], *[want[i + 1] for i in range(len(ints))]], ident
    return len(tables)


TARGETED = ("ods_behavior.clickevent", "dwd.click_wide", "dws.product_views")


def test_demo_warms_up_and_judges_freshness_over_its_measured_window(
        demo_lake: DemoLake) -> None:
    report, output = demo_lake.report, demo_lake.output
    assert "warm-up first (not measured)" in output
    assert "freshness over the measured window" in output
    warm, window = report["warm_up"], report["window"]
    assert warm is not None and window is not None, output[-3000:]
    assert f"warm-up: {warm['seconds']:.0f}s, not measured" in output
    start, end = window["start_ms"], window["end_ms"]
    catalog = pyiceberg_catalog(load_settings(None, environ=demo_lake.env()))
    verdicts = {v["table"]: v for v in report["freshness"]}
    assert sorted(verdicts) == sorted(TARGETED)
    for name in TARGETED:
        verdict = verdicts[name]
        events = read_markers(catalog.load_table(tuple(name.split(".")))).events
        # the warm-up committed through this layer before the clock started ...
        before = freshness_window(events, (0, start - 1))
        assert before is not None and before.commits > 0, name
        # ... and the verdict is the measured window's alone
        measured = freshness_window(events, (start, end))
        assert measured is not None and measured.commits == verdict["commits"] > 0, name
        assert measured.worst_s == pytest.approx(verdict["worst_s"]), name
        assert verdict["state"] == freshness_status(
            verdict["worst_s"], verdict["target_s"], verdict["warn_s"]), name
        assert f"  {name}: worst {verdict['worst_s']:.1f}s over {verdict['commits']} commits" \
            in output
    _edits_come_before_the_window(demo_lake, catalog)
    _status_judges_the_last_minute(demo_lake)


def _edits_come_before_the_window(demo_lake: DemoLake, catalog: ReadCatalog) -> None:
    """The erase and the correction were committed at ODS in the edits' phase, which
    ended when the window opened; their propagation is reported, not judged."""
    report, output = demo_lake.report, demo_lake.output
    phase, window = report["edits_phase"], report["window"]
    assert phase is not None and phase["end_ms"] == window["start_ms"], phase
    ods = catalog.load_table(("ods_behavior", "clickevent"))
    edited = [s.timestamp_ms for s in ods.snapshots()
              if s.summary is not None and s.summary.operation.value in ("delete", "overwrite")
              and phase["start_ms"] - 1000 <= s.timestamp_ms]
    assert len(edited) >= 2 and all(t <= phase["end_ms"] for t in edited), (edited, phase)
    assert phase["settled"] is not None and "the edits' phase (before the measured window, " \
        "not judged" in output
    assert sorted(v["table"] for v in phase["freshness"]) == sorted(TARGETED)
    names = list(report["phase_seconds"])
    assert names.index("warming up") < names.index("editing") < names.index("running")


def _status_judges_the_last_minute(demo_lake: DemoLake) -> None:
    """``icetide status`` after the demo: each stopped table judged over its last minute
    of commits, the window in the JSON and said under the table."""
    status = [sys.executable, "-m", "icetide.cli", "status", "--no-lag"]
    done = subprocess.run([*status, "--format", "json"], env=demo_lake.env(),
                          capture_output=True, text=True, timeout=300, check=True)
    rows = {row["table"]: row for row in json.loads(done.stdout)}
    for name in TARGETED:
        row, window = rows[name], rows[name]["window"]
        assert row["activity"] == "stopped" and window["default"] is True, row
        assert window["end_ms"] - window["start_ms"] == int(WINDOW_S * 1000)
        assert row["state"] == freshness_status(window["worst_s"], row["target_s"],
                                                row["warn_s"]), row
    table = subprocess.run(status, env=demo_lake.env(), capture_output=True, text=True,
                           timeout=300, check=True).stdout
    assert "judged by the worst freshness a commit achieved in the last 60 s" in table
    assert "when committed" in table
