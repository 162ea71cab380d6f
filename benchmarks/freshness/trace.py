"""Trace probe events through the layers by their markers alone (no data scan).

A probe is produced to Kafka; its delivery report gives its partition and offset. Then:

* ODS: the first ``clickevent`` commit whose marker end offset of that partition is past
  the probe's offset made it visible — that commit's snapshot id and time;
* DWD: the first ``click_wide`` commit whose marker end (an ODS snapshot id) is at or
  after that ODS snapshot (by sequence number);
* DWS: likewise the first commit on ``dws.product_views`` of the flow counting views
  (``count_views_uv``; ``count_views`` before it also counted visitors) whose position
  in ``dwd.click_wide`` is at or after the DWD snapshot.

Markers are the flows' own exactly-once positions, so this is exact, costs only metadata
reads, and is not fooled by compaction (a rewrite carries no marker and moves no
position).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icetide.model.markers import Marker

#: (table, flows): the marker commits of any of those flows on the table
ODS = ("ods_behavior.clickevent", ("ods_behavior.clickevent",))
DWD = ("dwd.click_wide", ("dwd.click_wide",))
DWS = ("dws.product_views", ("dws.count_views_uv", "dws.count_views"))
LAYERS = {"ODS": ODS, "DWD": DWD, "DWS": DWS}


@dataclass(frozen=True)
class Probe:
    partition: int
    offset: int
    produced_ms: int


@dataclass(frozen=True)
class Commit:
    snapshot_id: int
    sequence: int
    committed_ms: int
    end: dict[str, Any]
    max_event_ms: int | None = None  # the newest event time the commit reflects


def commits(catalog: Any, table: str, flows: Sequence[str]) -> list[Commit]:
    """The marker commits of ``flows`` on ``table``, oldest first (pyiceberg, no Spark)."""
    loaded = catalog.load_table(tuple(table.split(".")))
    found: list[Commit] = []
    for snap in loaded.metadata.snapshots:
        summary = snap.summary.additional_properties if snap.summary is not None else {}
        marker = Marker.from_summary(summary)
        if marker is not None and marker.flow in flows:
            found.append(Commit(snap.snapshot_id, snap.sequence_number or 0, snap.timestamp_ms,
                                dict(marker.end), marker.max_event_time_ms))
    return sorted(found, key=lambda c: c.sequence)


def sequences(catalog: Any, table: str) -> dict[int, int]:
    """snapshot id → sequence number of every snapshot of ``table``."""
    loaded = catalog.load_table(tuple(table.split(".")))
    return {s.snapshot_id: s.sequence_number or 0 for s in loaded.metadata.snapshots}


def ods_hits(ods: Sequence[Commit], probes: Sequence[Probe]) -> list[Commit | None]:
    """Per probe, the first ODS commit whose end offset of its partition passes it."""
    out: list[Commit | None] = []
    for probe in probes:
        hit = None
        for commit in ods:  # commits are few (one per batch); probes ~ one a second
            (end,) = commit.end.values()
            if int(end.get(str(probe.partition), -1)) > probe.offset:
                hit = commit
                break
        out.append(hit)
    return out


def next_hits(upstream: str, upstream_seq: dict[int, int], downstream: Sequence[Commit],
              hits: Sequence[Commit | None]) -> list[Commit | None]:
    """Per upstream hit, the first downstream commit that read ``upstream`` (``db.table``)
    up to it or past it."""
    reach = [_reached(upstream, upstream_seq, c) for c in downstream]
    best = [max(reach[: i + 1]) for i in range(len(reach))]  # a marker never moves back
    out: list[Commit | None] = []
    for hit in hits:
        if hit is None:
            out.append(None)
            continue
        i = bisect.bisect_left(best, hit.sequence)
        out.append(downstream[i] if i < len(downstream) else None)
    return out


def _reached(upstream: str, upstream_seq: dict[int, int], commit: Commit) -> int:
    """The sequence number of the ``upstream`` snapshot the commit's position is at (-1:
    none). A flow's position holds one entry per input, keyed ``iceberg:<catalog>.<db.table>``
    (a changelog is its own input)."""
    ends = [v for k, v in commit.end.items() if k.endswith(f".{upstream}")]
    if len(ends) != 1:
        return -1
    (end,) = ends
    snapshot = end.get("snapshot") if isinstance(end, dict) else None
    return -1 if snapshot is None else upstream_seq.get(int(snapshot), -1)


def freshness(catalog: Any, probes: Sequence[Probe]) -> dict[str, list[float | None]]:
    """Per layer, per probe: seconds from produce to the commit that made it visible."""
    ods = ods_hits(commits(catalog, *ODS), probes)
    dwd = next_hits(ODS[0], sequences(catalog, ODS[0]), commits(catalog, *DWD), ods)
    dws = next_hits(DWD[0], sequences(catalog, DWD[0]), commits(catalog, *DWS), dwd)
    return {layer: [None if h is None else (h.committed_ms - p.produced_ms) / 1000
                    for h, p in zip(hits, probes, strict=True)]
            for layer, hits in (("ODS", ods), ("DWD", dwd), ("DWS", dws))}


#: Tables of the pipeline that serve no freshness target: the scheduler refreshes them on
#: spare capacity, so how often they commit is measured beside the probes' freshness.
UNTARGETED = ("dws.user_activity", "dws.user_profile", "ads.daily_product_report")


def cadence(catalog: Any, table: str, since_ms: int, until_ms: int) -> tuple[int, float]:
    """``(commits, longest gap in seconds)`` of ``table`` between ``since_ms`` and
    ``until_ms`` (wall-clock ms; compactions not counted): :func:`longest_gap`."""
    loaded = catalog.load_table(tuple(table.split(".")))
    return longest_gap([s.timestamp_ms for s in loaded.metadata.snapshots
                        if s.summary is None or s.summary.operation.value != "replace"],
                       since_ms, until_ms)


def longest_gap(times_ms: Sequence[int], since_ms: int, until_ms: int) -> tuple[int, float]:
    """``(commits in the window, longest time without one in seconds)``, counting from the
    window's start and to its end: the table is at least that stale at some moment."""
    inside = sorted(t for t in times_ms if since_ms <= t <= until_ms)
    edges = [since_ms, *inside, until_ms]
    return len(inside), max(b - a for a, b in itertools.pairwise(edges)) / 1000
