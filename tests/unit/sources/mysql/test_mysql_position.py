"""Positions, key encoding, sequences and chunk SQL (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from icetide.errors import SourceError
from icetide.sources.mysql.binlog import _merge
from icetide.sources.mysql.position import (
    BinlogPosition,
    CdcPosition,
    TableProgress,
    decode_key,
    encode_key,
    merge_gtid,
    sequence,
)
from icetide.sources.mysql.schema import build_schema
from icetide.sources.mysql.snapshot import chunk_args, chunk_query


def test_snapshot_position_round_trip_and_phase_switch() -> None:
    start = CdcPosition.start_snapshot(BinlogPosition("binlog.000003", 1234, "0-1-5"),
                                       ["db.a", "db.b"])
    as_json = start.to_json()
    assert as_json["phase"] == "snapshot"
    assert CdcPosition.from_json(as_json) == start
    mid = start.advance(TableProgress("db.a", ["9"], 9, True))
    assert mid.phase == "snapshot" and mid.current() == TableProgress("db.b")
    end = mid.advance(TableProgress("db.b", [3], 3, True))
    assert end.phase == "binlog"
    assert end.binlog == start.binlog  # the binlog starts at the first view
    assert end.to_json() == {"phase": "binlog", "file": "binlog.000003", "pos": 1234,
                             "gtid": "0-1-5", "snapshot": None}


def test_no_tables_starts_in_binlog_phase() -> None:
    assert CdcPosition.start_snapshot(BinlogPosition("b.000001", 4), []).phase == "binlog"


@pytest.mark.parametrize("bad", [None, {}, {"phase": "x", "file": "b.000001", "pos": 4},
                                 {"phase": "binlog", "file": "nonumber", "pos": 4},
                                 {"phase": "binlog", "file": "b.000001", "pos": "x"}])
def test_bad_positions_are_named(bad: object) -> None:
    with pytest.raises(SourceError, match="resnapshot"):
        CdcPosition.from_json(bad)


def test_key_encoding_round_trip() -> None:
    key = (1, "a", Decimal("1.50"), dt.datetime(2024, 1, 2, 3, 4, 5, 6), dt.date(2024, 1, 2),
           b"\x00\xff", dt.timedelta(hours=-1), 1.5, None)
    encoded = encode_key(key)
    assert decode_key(encoded) == key
    import json
    assert decode_key(json.loads(json.dumps(encoded))) == key


def test_sequence_orders_files_events_and_rows() -> None:
    seqs = [sequence("binlog.000001", 4_000_000_000, 9), sequence("binlog.000002", 4, 0),
            sequence("binlog.000002", 4, 1), sequence("binlog.000002", 5, 0)]
    assert seqs == sorted(seqs)
    assert seqs[-1] < 10**38


def test_position_order_across_files() -> None:
    assert BinlogPosition("binlog.000002", 4).key() > BinlogPosition("binlog.000001", 10**9).key()


def test_gtid_state_merges_per_domain() -> None:
    assert merge_gtid(None, "0-1-5") == "0-1-5"
    assert merge_gtid("0-1-5,1-2-7", "0-1-6") == "0-1-6,1-2-7"
    assert merge_gtid("0-1-6", "2-1-1") == "0-1-6,2-1-1"
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert _merge(f"{uuid}:1-5", f"{uuid}:6") == f"{uuid}:1-6"


def test_keyset_chunk_sql_for_a_composite_key() -> None:
    schema = build_schema("d", "t`x", [("a", "int", "NO"), ("b", "varchar(3)", "NO"),
                                       ("v", "text", "YES")], ["a", "b"])
    assert chunk_query(schema, False) == "SELECT `a`, `b`, `v` FROM `d`.`t``x` " \
        "ORDER BY `a`, `b` LIMIT %s"
    sql = chunk_query(schema, True, True)
    assert sql == ("SELECT `a`, `b`, `v` FROM `d`.`t``x` WHERE ((`a` > %s) OR "
                   "(`a` = %s AND `b` > %s)) AND NOT ((`a` > %s) OR (`a` = %s AND `b` > %s)) "
                   "ORDER BY `a`, `b` LIMIT %s")
    assert chunk_args((1, "x"), 10, (5, "y")) == (1, 1, "x", 5, 5, "y", 10)
