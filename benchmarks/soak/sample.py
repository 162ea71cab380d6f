"""What the soak benchmark records once a minute, from metadata and two timed queries.

Freshness per minute comes from the probes produced in that minute, traced through the
flows' markers (:mod:`benchmarks.freshness.trace`) one minute later — while their
snapshots still exist (expiry keeps ``maintenance.snapshot_retention``, 10 minutes).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import numpy as np

from benchmarks.freshness.trace import Probe, freshness

TABLES = ("ods_behavior.clickevent", "dwd.click_wide", "dws.product_views",
          "dim_db.products")
QUERIES = {
    "count": "SELECT count(*) FROM lake.ods_behavior.clickevent",
    "group by": "SELECT productId, name, product_price, count(*) FROM "
                "lake.ods_behavior.clickevent GROUP BY productId, name, product_price",
}


@dataclass
class Minute:
    """One row of the per-minute table."""

    minute: int
    ods_p99: float | None = None
    dws_p99: float | None = None
    files: dict[str, int] = field(default_factory=dict)
    deletes: dict[str, int] = field(default_factory=dict)
    metadata_kb: dict[str, float] = field(default_factory=dict)
    snapshots: dict[str, int] = field(default_factory=dict)
    query_s: dict[str, float] = field(default_factory=dict)
    ods_rows: int = 0


def table_numbers(catalog: Any, name: str) -> tuple[int, int, float, int, int]:
    """Data files, delete files, current metadata.json size (KB), snapshots, records."""
    table = catalog.load_table(tuple(name.split(".")))
    snap = table.current_snapshot()
    summary = snap.summary.additional_properties if snap and snap.summary else {}
    path = urlparse(str(table.metadata_location)).path
    size = os.path.getsize(path) / 1024 if os.path.exists(path) else 0.0
    return (int(summary.get("total-data-files", 0)), int(summary.get("total-delete-files", 0)),
            size, len(table.metadata.snapshots), int(summary.get("total-records", 0)))


def query_seconds(settings: Any, catalog: Any) -> dict[str, float]:
    """Wall seconds of each of :data:`QUERIES` through icetide's DuckDB path."""
    from icetide.query.duckdb_path import run_duckdb

    out = {}
    for name, sql in QUERIES.items():
        began = time.perf_counter()
        run_duckdb(settings, sql, catalog=catalog)
        out[name] = round(time.perf_counter() - began, 3)
    return out


def minute_row(settings: Any, catalog: Any, minute: int) -> Minute:
    """Tables and queries now (freshness is filled in a minute later)."""
    row = Minute(minute)
    for name in TABLES:
        short = name.split(".", 1)[1]
        (row.files[short], row.deletes[short], row.metadata_kb[short],
         row.snapshots[short], records) = table_numbers(catalog, name)
        if short == "clickevent":
            row.ods_rows = records
    row.query_s = query_seconds(settings, catalog)
    return row


def fill_freshness(catalog: Any, row: Minute, probes: Sequence[Probe], start_ms: int) -> None:
    """ODS/DWS p99 of the probes produced during ``row.minute``."""
    mine = [p for p in probes if (p.produced_ms - start_ms) // 60_000 == row.minute]
    if not mine:
        return
    lat = freshness(catalog, mine)
    for layer, attr in (("ODS", "ods_p99"), ("DWS", "dws_p99")):
        seen = [v for v in lat[layer] if v is not None]
        setattr(row, attr, float(np.percentile(seen, 99)) if seen else None)
