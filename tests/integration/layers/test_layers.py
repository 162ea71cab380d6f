"""ODS → DWD → DWS → ADS of examples/clickstream, checked against a recomputation.

Real broker, Spark and Iceberg: clicks go through the seed pipeline (Kafka → ODS), then
the layers pipeline runs incrementally three times — a first load, a load after a price
and a member-level change, and a replay that must change nothing. After each run every
layer equals a from-scratch computation over ODS and the dimensions.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest

from icetide.devkit.demo.reconcile import all_ok, reconcile_layers
from icetide.lake.commit import load_table
from tests.integration.layers.layers_helpers import BASE_MS, Lake, click_events, produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

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
