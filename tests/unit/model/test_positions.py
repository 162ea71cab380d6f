"""Typed positions keep the JSON stored in existing markers: a lake written before resumes."""

from __future__ import annotations

import orjson

from icetide.model.markers import Marker
from icetide.model.positions import BinlogPositionJson, KafkaPosition
from icetide.sources.kafka.planner import normalize_position
from icetide.sources.mysql.position import CdcPosition

KAFKA = '{"0": 12, "1": 7, "cluster": "icetide-b94232f2db1a"}'
SNAPSHOT = ('{"phase": "snapshot", "file": "binlog.000002", "pos": 4015, "gtid": "0-1-9", '
            '"snapshot": {"tables": [{"table": "user_db.products", "after": ["7"], '
            '"rows": 7, "done": false}]}}')
BINLOG = '{"phase": "binlog", "file": "binlog.000003", "pos": 365, "gtid": null, "snapshot": null}'


def test_binlog_positions_round_trip_exactly() -> None:
    for text in (SNAPSHOT, BINLOG):
        stored: BinlogPositionJson = orjson.loads(text)
        assert CdcPosition.from_json(stored).to_json() == stored


def test_kafka_positions_read_as_stored() -> None:
    stored: KafkaPosition = orjson.loads(KAFKA)
    assert normalize_position("clicks", stored) == {0: 12, 1: 7}


def test_markers_hold_positions_unchanged() -> None:
    start, end = orjson.loads(KAFKA), orjson.loads(BINLOG)
    marker = Marker("f", {"kafka:clicks": start}, {"mysql:shop": end}, rows=3)
    back = Marker.from_summary(marker.to_summary())
    assert back.start == {"kafka:clicks": start} and back.end == {"mysql:shop": end}
