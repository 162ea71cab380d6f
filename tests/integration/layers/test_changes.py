"""Changes at ODS flow through every layer: an erase, a correction, a product deleted.

Real broker, Spark and Iceberg, the example pipeline: after each change made straight
to a table with SQL (as a user would, with `icetide sql` or Trino) one `--once` run
brings every layer to what a recomputation over what ODS now holds gives.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from icetide.devkit.demo.reconcile import all_ok, reconcile_layers
from icetide.engine.run import PipelineRun
from icetide.engine.table_refresh import request_refresh
from icetide.errors import PipelineError
from icetide.lake.changes import ChangeNotReadable
from tests.integration.layers.layers_helpers import BASE_MS, Lake, click_events, produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

ERASED = "10952"  # a member with clicks on every product


def check_all(lake: Lake) -> None:
    checks = reconcile_layers(lake.spark, lake.cat)
    assert all_ok(checks), "\n".join(c.line() for c in checks)


def count(lake: Lake, sql: str) -> int:
    return int(next(iter(lake.rows(sql)))[0])


def test_erase_and_correction_reach_every_layer(lake: Lake) -> None:
    lake.dims.seed(datetime(2026, 1, 1))
    produce(lake.bootstrap, lake.topic, click_events(0, 150, BASE_MS))
    lake.run()
    check_all(lake)
    erased = count(lake, "SELECT count(*) FROM {c}.ods_behavior.clickevent "
                         f"WHERE uid = '{ERASED}'")
    assert erased > 0

    # A GDPR erase at ODS: merge-on-read position deletes, read back as removed rows.
    lake.sql(f"DELETE FROM {{c}}.ods_behavior.clickevent WHERE uid = '{ERASED}'")
    done = lake.run()
    assert done["dwd.click_wide"] >= erased  # its retractions were committed
    check_all(lake)
    for table, column in (("dwd.click_wide", "uid"), ("dws.user_activity", "uid"),
                          ("dws.product_user", "uid")):
        assert count(lake, f"SELECT count(*) FROM {{c}}.{table} WHERE {column} = '{ERASED}'") == 0
    # the member keeps its member attributes, its activity is gone
    assert lake.rows(f"SELECT clicks, member_name IS NOT NULL FROM {{c}}.dws.user_profile "
                     f"WHERE uid = '{ERASED}'") == {(None, True)}

    # A correction: some clicks' productId was wrong.
    lake.sql("UPDATE {c}.ods_behavior.clickevent SET productId = '9', name = NULL "
             "WHERE productId = '3'")
    lake.run()
    check_all(lake)
    assert count(lake, "SELECT count(*) FROM {c}.dwd.click_wide WHERE productId = '3'") == 0
    assert count(lake, "SELECT count(*) FROM {c}.dws.product_views WHERE productId = '3'") == 0

    # A product deleted in MySQL: its later clicks have no enrichment (a lookup as of
    # processing time); product_views keeps its newest known name and price.
    lake.sql("DELETE FROM {c}.dim_db.products WHERE productId = '5'")
    # New clicks after the changes still flow, and a replay changes nothing.
    produce(lake.bootstrap, lake.topic, click_events(150, 40, BASE_MS))
    lake.run()
    check_all(lake)
    assert lake.rows("SELECT count(*) > 0 FROM {c}.dwd.click_wide WHERE productId = '5' "
                     "AND name IS NULL") == {(True,)}
    assert lake.rows("SELECT name FROM {c}.dws.product_views WHERE productId = '5'") == {
        ("test05",)}
    before = lake.snapshots()
    assert lake.run() == {}
    assert lake.snapshots() == before


def test_rollback_stops_the_flows_and_refresh_rebuilds(lake: Lake) -> None:
    """A rollback at ODS cannot be told apart from new data: the DWD flow stops naming
    `icetide table refresh`; refreshing DWD and everything below rebuilds every layer."""
    lake.dims.seed(datetime(2026, 1, 1))
    produce(lake.bootstrap, lake.topic, click_events(0, 80, BASE_MS))
    lake.run()
    ods = f"{lake.cat}.ods_behavior.clickevent"
    first = int(lake.spark.sql(f"SELECT snapshot_id FROM {ods}.snapshots "
                               "ORDER BY committed_at").collect()[0][0])
    produce(lake.bootstrap, lake.topic, click_events(80, 40, BASE_MS))
    lake.run()
    lake.sql(f"CALL {{c}}.system.rollback_to_snapshot('ods_behavior.clickevent', {first})")
    with pytest.raises(ChangeNotReadable, match=r"icetide table refresh dwd\.click_wide"):
        PipelineRun(lake.spark, lake.settings, lake.pipeline, only=["click_wide"]).run_once()

    with pytest.raises(PipelineError, match="kafka:"):  # ODS is fed by a topic
        request_refresh(lake.spark, ods)
    done = request_refresh(lake.spark, f"{lake.cat}.dwd.click_wide", downstream=True)
    rebuilt = {d.table.split(".", 1)[1] for d in done}
    assert {"dwd.click_wide", "dws.product_user", "dws.product_views", "dws.user_activity",
            "dws.user_profile", "ads.daily_product_report"} <= rebuilt
    assert count(lake, "SELECT count(*) FROM {c}.dwd.click_wide") == 0
    lake.run()
    check_all(lake)
    assert count(lake, "SELECT count(*) FROM {c}.dwd.click_wide") == count(
        lake, "SELECT count(*) FROM {c}.ods_behavior.clickevent")
