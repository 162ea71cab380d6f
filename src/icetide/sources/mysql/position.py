"""Positions of the MySQL/MariaDB CDC source (pure; no database access).

A committed position is the JSON value the flow loop stores in the target table's
snapshot summary. It has two phases::

    {"phase": "snapshot", "file": "binlog.000003", "pos": 1234, "gtid": "0-1-57",
     "snapshot": {"tables": [
         {"table": "user_db.products", "after": ["5"], "rows": 5, "done": false},
         {"table": "user_db.user_member", "after": null, "rows": 0, "done": false}]}}

    {"phase": "binlog", "file": "binlog.000004", "pos": 885, "gtid": "0-1-90",
     "snapshot": null}

In the snapshot phase ``file``/``pos``/``gtid`` are the coordinates of the first
consistent view, where the binlog phase starts; ``after`` is the last key of a table's
last committed chunk (:func:`encode_key`), ``done`` marks a finished table. What each
field means and why a snapshot resumed after a crash converges: docs/cdc.md ("Positions
and a resumed snapshot").
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from icetide.errors import SourceError
from icetide.model.json import JsonValue
from icetide.model.positions import (
    BinlogPositionJson,
    SnapshotProgressJson,
    TableProgressJson,
)
from icetide.sources.mysql.conn import Row

Phase = Literal["snapshot", "binlog"]
_FILE_SEQ = re.compile(r"\.(\d+)$")
# _pos = file_seq * 10^20 + event_pos * 10^10 + row  (fits decimal(38,0))
_FILE_FACTOR = 10**20
_POS_FACTOR = 10**10


def file_seq(name: str) -> int:
    """The sequence number of a binlog file name: ``binlog.000123`` → 123."""
    match = _FILE_SEQ.search(name)
    if not match:
        raise SourceError(
            f"binlog file name {name!r} has no numeric suffix like 'binlog.000001'; "
            "the stored position is corrupt: re-snapshot with `icetide cdc resnapshot TABLE`"
        )
    return int(match.group(1))


def sequence(file: str, pos: int, row: int = 0) -> int:
    """A number that orders every row version: snapshot view or binlog event + row index."""
    return file_seq(file) * _FILE_FACTOR + pos * _POS_FACTOR + row


@dataclass(frozen=True)
class BinlogPosition:
    """A binlog coordinate: ``file``/``pos`` and, when known, the GTID state."""

    file: str
    pos: int
    gtid: str | None = None

    def key(self) -> tuple[int, int]:
        """Sort key comparing positions across files."""
        return (file_seq(self.file), self.pos)

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}" + (f" (gtid {self.gtid})" if self.gtid else "")


def merge_gtid(state: str | None, gtid: str) -> str:
    """MariaDB GTID state after committing ``gtid`` (``domain-server-seq``), one per domain."""
    domains: dict[str, str] = {}
    for item in (state or "").split(","):
        item = item.strip()
        if item:
            domains[item.split("-", 1)[0]] = item
    domains[gtid.split("-", 1)[0]] = gtid
    return ",".join(domains[d] for d in sorted(domains, key=int))


def encode_key(values: Row) -> list[JsonValue]:
    """Encode a primary-key tuple as JSON values (tagged where JSON has no type)."""
    out: list[JsonValue] = []
    for v in values:
        if v is None or isinstance(v, bool | int | str):
            out.append(v)
        elif isinstance(v, Decimal):
            out.append({"dec": str(v)})
        elif isinstance(v, dt.datetime):
            out.append({"ts": v.isoformat(sep=" ")})
        elif isinstance(v, dt.date):
            out.append({"date": v.isoformat()})
        elif isinstance(v, bytes):
            out.append({"b64": base64.b64encode(v).decode()})
        elif isinstance(v, dt.timedelta):
            out.append({"us": (v.days * 86400 + v.seconds) * 10**6 + v.microseconds})
        elif isinstance(v, float):
            out.append({"f": repr(v)})
        else:
            raise SourceError(
                f"primary-key value {v!r} of type {type(v).__name__} cannot be stored in a "
                "position; use a key of integer, string, decimal, date/time or binary columns"
            )
    return out


def _decode_one(v: JsonValue) -> object:
    if not isinstance(v, dict):
        return v
    (tag, raw), = v.items()
    decoders: dict[str, Callable[..., object]] = {
        "dec": Decimal, "ts": dt.datetime.fromisoformat, "date": dt.date.fromisoformat,
        "b64": base64.b64decode, "f": float,
        "us": lambda us: dt.timedelta(microseconds=us),
    }
    if tag not in decoders:
        raise SourceError(f"unknown key encoding {v!r} in a stored snapshot position")
    return decoders[tag](raw)


def decode_key(values: list[JsonValue] | None) -> Row | None:
    """Inverse of :func:`encode_key`."""
    return None if values is None else tuple(_decode_one(v) for v in values)


@dataclass(frozen=True)
class TableProgress:
    """Snapshot progress of one table: last committed key (encoded) and rows so far."""

    table: str
    after: list[JsonValue] | None = None
    rows: int = 0
    done: bool = False

    def to_json(self) -> TableProgressJson:
        return {"table": self.table, "after": self.after, "rows": self.rows, "done": self.done}


@dataclass(frozen=True)
class CdcPosition:
    """The committed position of a MySQL source (see the module docstring)."""

    phase: Phase
    binlog: BinlogPosition
    tables: tuple[TableProgress, ...] = ()

    @classmethod
    def start_snapshot(cls, at: BinlogPosition, tables: list[str]) -> CdcPosition:
        phase: Phase = "snapshot" if tables else "binlog"
        return cls(phase, at, tuple(TableProgress(t) for t in tables))

    def current(self) -> TableProgress | None:
        """The first table whose snapshot is not finished."""
        return next((t for t in self.tables if not t.done), None)

    def advance(self, progress: TableProgress) -> CdcPosition:
        """Record a committed chunk; switches to the binlog phase after the last table."""
        tables = tuple(progress if t.table == progress.table else t for t in self.tables)
        nxt = replace(self, tables=tables)
        return nxt if nxt.current() is not None else replace(nxt, phase="binlog")

    def at(self, binlog: BinlogPosition) -> CdcPosition:
        """The binlog phase at ``binlog``."""
        return CdcPosition("binlog", binlog, self.tables)

    def to_json(self) -> BinlogPositionJson:
        snap: SnapshotProgressJson | None = (
            {"tables": [t.to_json() for t in self.tables]} if self.phase == "snapshot" else None)
        return {"phase": self.phase, "file": self.binlog.file, "pos": self.binlog.pos,
                "gtid": self.binlog.gtid, "snapshot": snap}

    @classmethod
    def from_json(cls, value: Any) -> CdcPosition:
        """Parse a stored position; names the bad value when it is not one."""
        try:
            phase = value["phase"]
            if phase not in ("snapshot", "binlog"):
                raise ValueError(f"phase {phase!r}")
            binlog = BinlogPosition(str(value["file"]), int(value["pos"]), value.get("gtid"))
            file_seq(binlog.file)
            snap = value.get("snapshot") or {"tables": []}
            tables = tuple(
                TableProgress(str(t["table"]), t.get("after"), int(t.get("rows", 0)),
                              bool(t.get("done", False)))
                for t in snap["tables"]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(
                f"stored MySQL CDC position {value!r} is not valid ({exc}); expected "
                "{'phase': 'snapshot'|'binlog', 'file', 'pos', 'gtid', 'snapshot'}; "
                "re-snapshot with `icetide cdc resnapshot TABLE`"
            ) from None
        return cls(phase, binlog, tables)
