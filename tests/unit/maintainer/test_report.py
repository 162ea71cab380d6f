"""The one-line summary of a maintenance pass (what the continuous run prints)."""

from __future__ import annotations

from icetide.maintainer.report import (
    HudiMaintenanceReport,
    HudiStats,
    MaintenanceReport,
    TableStats,
)


def test_summary_names_the_steps_that_acted_with_their_time() -> None:
    report = MaintenanceReport(
        "lake.ods.clicks", False, TableStats(data_files=302, snapshots=207),
        after=TableStats(data_files=14, snapshots=21),
        actions={"compaction": {"rewritten_data_files_count": 300}, "expiry": {"snapshots": 186}},
        skipped={"manifests": "gave way"}, seconds=12.34,
        step_seconds={"compaction": 9.01, "deletes": 0.02, "manifests": 1.0, "expiry": 2.5,
                      "orphans": 0.0})
    assert report.summary() == (
        "lake.ods.clicks in 12.3s (compaction 9.0s, expiry 2.5s; yielded: manifests): "
        "data files 302 → 14, snapshots 207 → 21")


def test_summary_of_a_pass_with_nothing_to_do() -> None:
    report = MaintenanceReport("lake.a.b", False, TableStats(data_files=3, snapshots=4))
    assert report.summary() == ("lake.a.b in 0.0s (nothing to do): data files 3 → ?, "
                                "snapshots 4 → ?")


def test_a_hudi_pass_summarizes_log_files_and_active_commits() -> None:
    report = HudiMaintenanceReport(
        "lake.dim.users", False, HudiStats(pending_log_files=12, commits=40, disk_bytes=900),
        after=HudiStats(pending_log_files=0, commits=9, disk_bytes=600),
        actions={"compaction": {"log_files": 12}, "archive": {"commits": 31}}, seconds=4.2,
        step_seconds={"compaction": 3.0, "clean": 0.5, "archive": 0.7})
    assert report.summary() == (
        "lake.dim.users (hudi) in 4.2s (compaction 3.0s, archive 0.7s): log files to compact "
        "12 → 0, active commits 40 → 9")
    assert report.bytes_freed == 300
    assert report.to_dict()["format"] == "hudi"
