"""The page's data for a lake shaped like the demo's (examples/clickstream): eleven
tables with their long names, Kafka, MySQL and lake sources, a stopped table — what the
layout must fit on a laptop screen."""

from __future__ import annotations

import time
from typing import Any

TABLES = ("ods_behavior.clickevent", "ods_behavior.clickevent_dlq", "dim_db.products",
          "dim_db.user_member", "dim_db.user_member__changelog", "dwd.click_wide",
          "dws.product_views", "dws.product_user", "dws.user_activity", "dws.user_profile",
          "ads.daily_product_report")
STOPPED = "ads.daily_product_report"


def _lag(table: str) -> dict[str, Any]:
    if table.startswith("ods"):
        return {"source": "kafka:clicktopic", "behind": 123_456, "unit": "messages"}
    if table.startswith("dim"):
        return {"source": "mysql:shop:user_db.products", "behind": 0, "unit": "seconds"}
    return {"source": "iceberg:lake.ods_behavior.clickevent", "behind": 0, "unit": "rows"}


def _row(table: str, now: int) -> dict[str, Any]:
    expectations = ({"long_visit": {"failed": 1234, "action": "warn"},
                     "valid_price": {"failed": 0, "action": "drop"}} if "dwd" in table else {})
    return {
        "table": table, "exists": True, "flows": [table], "last_commit_ms": now - 3_000,
        "rows_last_commit": 2_345, "rows_total": 118_812_345, "newest_event_ms": now - 5_000,
        "freshness_s": 3497.2, "achieved_s": 2.1, "target_s": 10.0, "warn_s": 30.0,
        "state": "ok", "mode": "continuous", "batch_s": 1.23,
        "dead_letters": 12 if table == "ods_behavior.clickevent" else 0, "dropped": None,
        "expectations": expectations, "lag": [{**_lag(table), "detail": {}, "error": None}],
        "errors": {}, "activity": "stopped" if table == STOPPED else "running",
        "pending": False, "master": "local[*]", "executors": ["driver"],
        "storage": {"data_files": 714, "avg_file_bytes": 1_234_567, "delete_files": 3,
                    "snapshots": 120, "last_maintenance_ms": now - 40_000},
    }


def demo_state() -> dict[str, Any]:
    """A ``DashboardState.to_json()`` of the demo's lake."""
    now = int(time.time() * 1000)
    layers = [("sources", ["kafka:clicktopic", "mysql:shop:user_db.products",
                           "mysql:shop:user_db.user_member"]),
              ("ODS", ["ods_behavior.clickevent"]),
              ("CDC dimensions", ["dim_db.products", "dim_db.user_member"]),
              ("DWD", ["dwd.click_wide"]),
              ("DWS", ["dws.product_views", "dws.product_user", "dws.user_activity",
                       "dws.user_profile"]),
              ("ADS", ["ads.daily_product_report"])]
    edges = [["kafka:clicktopic", "ods_behavior.clickevent"],
             ["ods_behavior.clickevent", "dwd.click_wide"], ["dim_db.products", "dwd.click_wide"],
             ["dim_db.user_member", "dwd.click_wide"], ["dwd.click_wide", "dws.product_views"],
             ["dws.product_views", "ads.daily_product_report"]]
    activity = {t: {"table": t, "commits_per_min": 12.4, "history": [], "sources": [],
                    "dead_letter_table": "ods_behavior.clickevent_dlq"
                    if t == "ods_behavior.clickevent" else None,
                    "dead_letters_total": 1_234 if t == "ods_behavior.clickevent" else None}
                for t in TABLES}
    return {"generated_ms": now, "pipeline": "clickstream",
            "status": [_row(t, now) for t in TABLES], "activity": activity,
            "dag": {"layers": [{"name": n, "nodes": names} for n, names in layers],
                    "nodes": [], "edges": edges},
            "lag": {"state": "ready", "fetched_ms": now, "error": None}}
