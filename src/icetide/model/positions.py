"""Typed source positions: what each source stores in a marker (``icetide.pos``).

A position is a JSON object; each source type has its own shape, named here so code
that handles one knows its fields. The markers store exactly this JSON, so a lake
written before keeps resuming.

* :data:`KafkaPosition` — next offset per partition (keys ``"0"``, ``"1"``…) plus
  ``"cluster"``, the broker cluster id the offsets belong to;
* :class:`TableSnapshotPosition` — the newest snapshot of an upstream Iceberg table (or of
  its changelog side table) that a flow has read: ``{"snapshot": id | null}``;
* :data:`SnapshotIdsPosition` — the snapshot id of each input of a materialized view
  (``{"lake.db.t": id | null}``);
* :class:`BinlogPositionJson` — a MySQL/MariaDB CDC source: snapshot progress then binlog
  file/pos/GTID (``icetide.sources.mysql.position.CdcPosition`` parses it), or a
  re-snapshot request ``{"phase": "resnapshot", "requested_at": ms}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypeAlias, TypedDict

#: Any source's position as the flow loop sees it: an opaque JSON object.
Position: TypeAlias = Mapping[str, object]

KafkaPosition: TypeAlias = dict[str, int | str]

SnapshotIdsPosition: TypeAlias = dict[str, int | None]


class TableSnapshotPosition(TypedDict):
    snapshot: int | None
    #: Set by ``icetide table refresh`` (request time, ms): the next batch reads the
    #: table in full at its current snapshot, as a first batch does.
    refresh: NotRequired[int]


class TableProgressJson(TypedDict):
    table: str
    after: object
    rows: int
    done: bool


class SnapshotProgressJson(TypedDict):
    tables: list[TableProgressJson]


class BinlogPositionJson(TypedDict, total=False):
    phase: Literal["snapshot", "binlog", "resnapshot"]
    file: str
    pos: int
    gtid: str | None
    snapshot: SnapshotProgressJson | None
    requested_at: int
