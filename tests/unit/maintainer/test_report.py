"""A maintenance pass's typed report: its one-line summary and its JSON."""

from __future__ import annotations

import json

from icetide.maintainer import report as hr
from icetide.maintainer.report import (
    STEPS,
    Compaction,
    DeleteRewrite,
    Expiry,
    MaintenanceReport,
    OrphanSweep,
    RewriteCounts,
    StepResults,
    TableStats,
)


def _report() -> MaintenanceReport:
    return MaintenanceReport(
        "lake.ods.clicks", False, TableStats(data_files=302, snapshots=207, disk_bytes=9000),
        after=TableStats(data_files=14, snapshots=21, disk_bytes=4000),
        actions=StepResults(
            compaction=Compaction("binpack", None, "small only", 302, False,
                                  RewriteCounts(rewritten_data_files_count=300,
                                                added_data_files_count=12)),
            expiry=Expiry(older_than_ms=1_700_000_000_000, snapshots=186,
                          kept_for_consumers=2)),
        skipped={"manifests": "gave way"}, seconds=12.34,
        step_seconds={"compaction": 9.01, "deletes": 0.02, "manifests": 1.0, "expiry": 2.5,
                      "orphans": 0.0})


def test_summary_names_the_steps_that_acted_with_their_time() -> None:
    assert _report().summary() == (
        "lake.ods.clicks in 12.3s (compaction 9.0s, expiry 2.5s; yielded: manifests): "
        "data files 302 → 14, snapshots 207 → 21")


def test_summary_of_a_pass_with_nothing_to_do() -> None:
    report = MaintenanceReport("lake.a.b", False, TableStats(data_files=3, snapshots=4))
    assert report.actions.done() == ()
    assert report.summary() == ("lake.a.b in 0.0s (nothing to do): data files 3 → ?, "
                                "snapshots 4 → ?")


def test_steps_done_in_pass_order() -> None:
    assert STEPS == ("compaction", "deletes", "manifests", "expiry", "orphans")
    results = StepResults(orphans=OrphanSweep(1, ("a",), 5), deletes=DeleteRewrite(4))
    assert results.done() == ("deletes", "orphans")


def test_json_keeps_each_steps_fields_with_icebergs_counts_beside_them() -> None:
    out = json.loads(json.dumps(_report().to_dict()))
    assert list(out) == ["table", "format", "dry_run", "before", "after", "actions", "skipped",
                         "seconds", "step_seconds", "bytes_freed"]
    assert out["format"] == "iceberg"
    assert out["actions"] == {
        "compaction": {"strategy": "binpack", "sort_order": None, "files": "small only",
                       "files_before": 302, "deletes_applied": False,
                       "rewritten_data_files_count": 300, "added_data_files_count": 12},
        "expiry": {"older_than_ms": 1_700_000_000_000, "snapshots": 186,
                   "kept_for_consumers": 2}}
    assert out["bytes_freed"] == 5000 and out["skipped"] == {"manifests": "gave way"}
    assert out["before"]["data_files"] == 302 and out["after"]["snapshots"] == 21


def test_a_dry_run_step_has_its_plan_and_no_counts() -> None:
    dry = StepResults(deletes=DeleteRewrite(7),
                      orphans=OrphanSweep(2, ("s3://b/t/x.parquet",), 10))
    assert dry.to_dict() == {"deletes": {"delete_files_before": 7},
                             "orphans": {"orphan_files": 2, "sample": ("s3://b/t/x.parquet",),
                                         "older_than_ms": 10}}


def test_a_procedures_row_reads_by_column_name_and_writes_back_the_same_columns() -> None:
    row = {"rewritten_delete_files_count": 4, "added_delete_files_count": 4,
           "rewritten_bytes_count": 1234, "added_bytes_count": 1200}
    counts = RewriteCounts.of_row({**row, "a_column_a_newer_iceberg_adds": 9})
    assert counts.rewritten_delete_files_count == 4 and counts.rewritten_data_files_count is None
    assert counts.to_dict() == row
    assert RewriteCounts.of_row({}).to_dict() == {}


def test_a_hudi_pass_summarizes_log_files_and_active_commits() -> None:
    report = hr.HudiMaintenanceReport(
        "lake.dim.users", False, hr.HudiStats(pending_log_files=12, commits=40, disk_bytes=900),
        after=hr.HudiStats(pending_log_files=0, commits=9, disk_bytes=600),
        actions=hr.HudiStepResults(compaction=hr.HudiCompaction(12, 3, "20261128030200000"),
                                archive=hr.HudiArchive(31, 9, {"20261128030100000": "flow log"})),
        seconds=4.2, step_seconds={"compaction": 3.0, "clean": 0.5, "archive": 0.7})
    assert report.summary() == (
        "lake.dim.users (hudi) in 4.2s (compaction 3.0s, archive 0.7s): log files to compact "
        "12 → 0, active commits 40 → 9")
    assert report.bytes_freed == 300
    out = json.loads(json.dumps(report.to_dict()))
    assert out["format"] == "hudi"
    assert out["actions"] == {
        "compaction": {"log_files": 12, "file_groups": 3, "instant": "20261128030200000"},
        "archive": {"commits": 31, "keep": 9, "kept_for_flows": {"20261128030100000": "flow log"}}}
    dry = hr.HudiStepResults(clean=hr.HudiClean(2, "20261128030000000", 5))
    assert dry.done() == ("clean",)
