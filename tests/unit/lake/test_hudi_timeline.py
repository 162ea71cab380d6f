"""A Hudi table's timeline read from its files without a JVM: completed instants only,
Avro (table version 8+) and JSON (version 6) commit metadata, icetide's markers, and
what ``tables``/``describe``/``status`` make of it.

The tables are laid out as Hudi 1.2 writes them (names, folders, properties and the
``HoodieCommitMetadata`` record's fields as tests/integration/cdc/test_hudi.py finds
them); the Avro files are written with fastavro."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro

from icetide.app.status import read_markers, table_status
from icetide.lake.hudi_timeline import (
    HudiTimeline,
    instant_ms,
    ms_instant,
    parse_properties,
    write_totals,
)
from icetide.query.hudi_info import (
    describe_hudi,
    find_hudi,
    hudi_named,
    hudi_summary,
    one_name_per_location,
)

SCHEMA = {"type": "record", "name": "HoodieCommitMetadata", "fields": [
    {"name": "partitionToWriteStats", "type": ["null", {"type": "map", "values": {
        "type": "array", "items": {"type": "record", "name": "Stat", "fields": [
            {"name": "fileId", "type": "string"}, {"name": "numWrites", "type": "long"},
            {"name": "numInserts", "type": "long"}, {"name": "numUpdateWrites", "type": "long"},
            {"name": "numDeletes", "type": "long"},
            {"name": "totalWriteBytes", "type": "long"}]}}}]},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}]},
    {"name": "operationType", "type": ["null", "string"]}]}
TABLE_SCHEMA = json.dumps({"type": "record", "name": "r", "fields": [
    {"name": "userid", "type": ["null", "long"]},
    {"name": "_cdc_pos", "type": ["null", {"type": "fixed", "name": "f", "size": 16,
                                           "logicalType": "decimal", "precision": 38,
                                           "scale": 0}]}]})


def _avro(marker: dict[str, str] | None, inserted: int, deleted: int) -> bytes:
    extra = {"schema": TABLE_SCHEMA}
    if marker is not None:
        extra["icetide.marker"] = json.dumps(marker)
    record = {"partitionToWriteStats": {"": [{
        "fileId": "f-0", "numWrites": inserted, "numInserts": inserted, "numUpdateWrites": 0,
        "numDeletes": deleted, "totalWriteBytes": 100}]},
        "extraMetadata": extra, "operationType": "UPSERT"}
    out = io.BytesIO()
    fastavro.writer(out, SCHEMA, [record])
    return out.getvalue()


def _marker(n: int) -> dict[str, str]:
    return {"icetide.flow": "dim_db.m", "icetide.start": json.dumps({"mysql:s:t": n}),
            "icetide.pos": json.dumps({"mysql:s:t": n + 1}), "icetide.rows": str(n + 1),
            "icetide.max-event-time": str(1_790_000_000_000 + n)}


def make_table(root: Path, kind: str = "MERGE_ON_READ") -> Path:
    """Three completed delta commits with markers, one clean, one commit in flight."""
    hoodie = root / "dim_db.db" / "m" / ".hoodie"
    timeline = hoodie / "timeline"
    timeline.mkdir(parents=True)
    (hoodie / "hoodie.properties").write_text(
        "#Properties saved on 2026\nhoodie.table.type=" + kind + "\nhoodie.table.version=9\n"
        "hoodie.timeline.layout.version=2\nhoodie.timeline.path=timeline\n"
        "hoodie.table.recordkey.fields=userid\nhoodie.table.timeline.timezone=UTC\n")
    action = "deltacommit" if kind == "MERGE_ON_READ" else "commit"
    for n, (req, done) in enumerate((("20261101000000000", "20261101000001000"),
                                     ("20261101000002000", "20261101000003000"),
                                     ("20261101000004000", "20261101000005500"))):
        (timeline / f"{req}.{action}.requested").write_bytes(b"")
        (timeline / f"{req}.{action}.inflight").write_bytes(b"{}")
        (timeline / f"{req}_{done}.{action}").write_bytes(_avro(_marker(n), 2, n))
        (timeline / f".{req}_{done}.{action}.crc").write_bytes(b"x")
    (timeline / "20261101000006000_20261101000006100.clean").write_bytes(b"")
    (timeline / f"20261101000007000.{action}.inflight").write_bytes(b"")  # a writer died
    return root / "dim_db.db" / "m"


def test_completed_commits_only_newest_marker_first(tmp_path: Path) -> None:
    timeline = HudiTimeline(str(make_table(tmp_path)))
    assert [i.requested for i in timeline.writes()] == [
        "20261101000000000", "20261101000002000", "20261101000004000"]
    assert [i.action for i in timeline.instants()][-1] == "clean"
    found = list(timeline.markers())
    assert [m.end for _, m in found] == [{"mysql:s:t": 3}, {"mysql:s:t": 2}, {"mysql:s:t": 1}]
    newest = timeline.writes()[-1]
    assert timeline.committed_ms(newest) == instant_ms("20261101000005500", "UTC")
    assert write_totals(timeline.metadata(newest)) == {
        "written": 2, "inserted": 2, "updated": 0, "deleted": 2, "bytes": 100, "files": 1}


def test_instant_times_in_the_tables_zone_round_trip() -> None:
    assert instant_ms("20261101000005500", "UTC") == 1_793_491_205_500
    assert ms_instant(1_793_491_205_500, "UTC") == "20261101000005500"
    assert ms_instant(instant_ms("20261101120000123")) == "20261101120000123"  # LOCAL


def test_a_version_6_table_keeps_json_commits_in_hoodie(tmp_path: Path) -> None:
    hoodie = tmp_path / "t" / ".hoodie"
    hoodie.mkdir(parents=True)
    (hoodie / "hoodie.properties").write_text("hoodie.table.type=COPY_ON_WRITE\n"
                                              "hoodie.table.version=6\n")
    meta = {"extraMetadata": {"icetide.marker": json.dumps(_marker(7))},
            "partitionToWriteStats": {}, "operationType": "UPSERT"}
    (hoodie / "20250101000000000.commit").write_text(json.dumps(meta))
    (hoodie / "20250101000001000.commit.inflight").write_text("{}")
    timeline = HudiTimeline(f"file:{tmp_path / 't'}")
    assert [(i.requested, i.completed) for i in timeline.writes()] == [
        ("20250101000000000", "20250101000000000")]
    assert next(iter(timeline.markers()))[1].end == {"mysql:s:t": 8}


def test_status_tables_and_describe_of_a_hudi_table(tmp_path: Path) -> None:
    timeline = HudiTimeline(str(make_table(tmp_path)))
    row = table_status("dim_db.m", timeline, now_ms=instant_ms("20261101000010000", "UTC"))
    assert (row.format, row.flows, row.rows_total, row.rows_last_commit) == (
        "hudi merge_on_read", ("dim_db.m",), None, 3)
    assert row.last_commit_ms == instant_ms("20261101000005500", "UTC")
    assert row.storage is not None and row.storage.snapshots == 3
    assert row.storage.last_maintenance_ms == instant_ms("20261101000006100", "UTC")
    assert read_markers(timeline).newest_event_ms == 1_790_000_000_002
    summary = hudi_summary("dim_db.m", timeline)
    assert (summary.format, summary.rows, summary.snapshots, summary.format_version) == (
        "hudi merge_on_read", None, 3, 9)
    info = describe_hudi("dim_db.m", timeline, snapshots=2)
    assert [c["name"] for c in info["schema"]] == ["userid", "_cdc_pos"]
    assert info["schema"][1]["type"] == "decimal(38,0)"
    assert info["identifier_fields"] == ["userid"]
    assert [s["snapshot_id"] for s in info["snapshots"]] == [
        20261101000004000, 20261101000002000]
    assert info["snapshots"][0]["parent_id"] == 20261101000002000
    assert info["snapshots"][0]["summary"]["icetide.pos"] == '{"mysql:s:t":3}'
    assert info["time_travel"]["snapshots_kept"] == 3


def test_merge_on_read_views_fold_into_their_table_and_names_resolve() -> None:
    synced = {"db.m": "file:/w/db.db/m", "db.m_ro": "file:/w/db.db/m",
              "db.m_rt": "file:/w/db.db/m", "db.c": "file:/w/db.db/c",
              "db.x_ro": "file:/w/db.db/x", "db.x_rt": "file:/w/db.db/x"}
    tables = one_name_per_location(synced)
    assert tables == {"db.c": "file:/w/db.db/c", "db.m": "file:/w/db.db/m",
                      "db.x": "file:/w/db.db/x"}
    assert find_hudi(tables, "lake.db.m", "lake") == "db.m"
    assert find_hudi(tables, "spark_catalog.db.M_rt", "lake") == "db.m"
    assert find_hudi(tables, "`db`.`c`", "lake") == "db.c"
    assert find_hudi(tables, "db.other", "lake") is None
    assert parse_properties(b"a=1\n# c\nb = x\\:y\n") == {"a": "1", "b": "x:y"}


def test_a_query_naming_a_hudi_table_is_found_by_its_references() -> None:
    tables = {"dim_db.m": "file:/w/dim_db.db/m"}
    assert hudi_named("SELECT * FROM spark_catalog.dim_db.m_rt r JOIN lake.x.y USING (id)",
                      tables, "lake") == "dim_db.m"
    assert hudi_named("SELECT count(*) FROM dim_db.M", tables, "lake") == "dim_db.m"
    assert hudi_named("SELECT 'dim_db.m' FROM dim_db.other", tables, "lake") is None
    assert hudi_named("SELECT * FROM dim_db.m", {}, "lake") is None
