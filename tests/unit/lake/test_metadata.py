"""The metadata document the lake reads markers and positions from."""

from __future__ import annotations

import orjson

from icetide.lake.metadata import TableMetadata, _LatestPerTable, parse_metadata


def _doc(current: int | None, snapshots: list[dict[str, object]]) -> bytes:
    return orjson.dumps({
        "format-version": 2, "location": "file:/wh/db/t",
        "current-snapshot-id": -1 if current is None else current,
        "properties": {"write.merge.mode": "copy-on-write", "icetide.freshness": "10 s"},
        "snapshots": snapshots,
    })


def _snap(sid: int, parent: int | None, seq: int, **summary: str) -> dict[str, object]:
    raw: dict[str, object] = {"snapshot-id": sid, "sequence-number": seq,
                              "timestamp-ms": 1000 * sid, "summary": summary}
    if parent is not None:
        raw["parent-snapshot-id"] = parent
    return raw


def test_ancestors_walk_back_from_current_and_stop_at_an_expired_parent() -> None:
    meta = parse_metadata(_doc(4, [
        _snap(2, 1, 2, operation="append"),  # parent 1 was expired
        _snap(3, 2, 3, operation="overwrite", **{"icetide.flow": "f"}),
        _snap(4, 3, 4, operation="replace"),
        _snap(9, 2, 5, operation="append"),  # another branch: never an ancestor of 4
    ]))
    assert [s.snapshot_id for s in meta.ancestors()] == [4, 3, 2]
    assert [s.snapshot_id for s in meta.ancestors(3)] == [3, 2]
    assert meta.current is not None and meta.current.operation == "replace"
    third = meta.snapshots[3]
    assert third.summary == {"icetide.flow": "f"}  # operation is a field, not a summary key
    assert (third.parent_id, third.sequence_number, third.timestamp_ms) == (2, 3, 3000)
    assert meta.properties["write.merge.mode"] == "copy-on-write"
    assert meta.location == "file:/wh/db/t"


def test_an_empty_table_has_no_current_snapshot() -> None:
    for current in (None, -1):
        meta = parse_metadata(_doc(current, []))
        assert meta.current is None
        assert list(meta.ancestors()) == []
    assert list(parse_metadata(_doc(None, [])).ancestors(123)) == []


def test_a_metadata_version_is_parsed_once_and_a_newer_one_replaces_it() -> None:
    latest = _LatestPerTable()
    folder = "file:/w/db/t/metadata"
    v1, v2 = (f"{folder}/v1.metadata.json", "uuid-t"), (f"{folder}/v2.metadata.json", "uuid-t")
    other = ("file:/w/db/u/metadata/v1.metadata.json", "uuid-u")
    assert latest.get(v1) is None
    first, second, third = TableMetadata(1), TableMetadata(2), TableMetadata(3)
    latest.put(v1, first)
    latest.put(other, third)
    assert latest.get(v1) is first
    latest.put(v2, second)
    assert latest.get(v2) is second
    assert latest.get(v1) is None  # one entry per table: the older version is gone
    assert latest.get(other) is third
    recreated = (f"{folder}/v1.metadata.json", "uuid-t2")  # dropped, created again
    assert latest.get(recreated) is None
