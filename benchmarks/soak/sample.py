"""What the soak benchmark measures once a minute, and the probes' freshness as it goes.

Probe freshness is read *while* the run goes on (new ``dws.product_views`` snapshots
every few seconds, time-travelled for probe rows) because maintenance expires old
snapshots: reading them all at the end, as ``benchmarks.dws`` does, would miss some.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import numpy as np

TABLES = ("lake.ods_behavior.clickevent", "lake.dwd.click_wide", "lake.dws.product_views",
          "lake.dim_db.products")
QUERY = "SELECT productId, count(*) FROM lake.ods_behavior.clickevent GROUP BY productId"


@dataclass
class Minute:
    """One row of the per-minute table."""

    minute: int
    freshness_p99: float | None
    files: dict[str, int]
    metadata_kb: dict[str, float]
    snapshots: dict[str, int]
    query_s: float


def table_numbers(spark: Any, ident: str) -> tuple[int, float, int]:
    """Data files, current metadata.json size (KB), snapshots of ``ident``."""
    from icetide.lake.commit import load_table

    try:
        table = load_table(spark, ident)
    except Exception:  # not created yet
        return 0, 0.0, 0
    snap = table.currentSnapshot()
    files = int(snap.summary().get("total-data-files") or 0) if snap is not None else 0
    path = urlparse(str(table.operations().current().metadataFileLocation())).path
    size = os.path.getsize(path) / 1024 if os.path.exists(path) else 0.0
    return files, size, sum(1 for _ in table.snapshots())


class ProbeWatch:
    """Commit time of the first ``views`` snapshot holding each probe (polled)."""

    def __init__(self, spark: Any, views: str) -> None:
        self.spark, self.views = spark, views
        self.seen: dict[str, int] = {}
        self._done: set[int] = set()

    def poll(self) -> None:
        from icetide.lake.commit import load_table

        try:
            table = load_table(self.spark, self.views)
        except Exception:
            return
        snaps = sorted((int(s.timestampMillis()), int(s.snapshotId())) for s in table.snapshots())
        for ts, sid in snaps:
            if sid in self._done:
                continue
            self._done.add(sid)
            rows = self.spark.sql(f"SELECT productId FROM {self.views} VERSION AS OF {sid} "
                                  "WHERE productId LIKE 'probe-%'").collect()
            for (pid,) in rows:
                self.seen.setdefault(str(pid), ts)


def minute_row(spark: Any, minute: int, lat: list[float]) -> Minute:
    """The numbers of ``minute`` (freshness from ``lat``, if already known)."""
    files, meta, snaps = {}, {}, {}
    for ident in TABLES:
        short = ident.split(".", 1)[1]
        files[short], meta[short], snaps[short] = table_numbers(spark, ident)
    began = time.monotonic()
    spark.sql(QUERY).collect()
    query = time.monotonic() - began
    p99 = float(np.percentile(lat, 99)) if lat else None
    return Minute(minute, p99, files, meta, snaps, round(query, 3))


def freshness_by_minute(sent: dict[str, int], seen: dict[str, int], start_ms: int
                        ) -> dict[int, list[float]]:
    """Probe freshness (s) grouped by the minute the probe was produced in."""
    out: dict[int, list[float]] = {}
    for pid, at in sent.items():
        if pid in seen:
            out.setdefault((at - start_ms) // 60_000, []).append((seen[pid] - at) / 1000)
    return out
