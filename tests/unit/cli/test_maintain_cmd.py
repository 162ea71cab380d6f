"""``icetide maintain``'s tables: one row per report, read from its typed step results
(Iceberg tables, Hudi tables)."""

from __future__ import annotations

from icetide.cli.maintain_cmd import _hudi_row, _row
from icetide.maintainer import report as hr
from icetide.maintainer.report import (
    DeleteRewrite,
    Expiry,
    MaintenanceReport,
    OrphanSweep,
    RewriteCounts,
    StepResults,
    TableStats,
)


def test_a_pass_row_shows_what_each_step_did() -> None:
    report = MaintenanceReport(
        "lake.dim.products", False, TableStats(data_files=4, delete_files=4, disk_bytes=3 << 20),
        after=TableStats(data_files=4, delete_files=4, disk_bytes=1 << 20),
        actions=StepResults(
            deletes=DeleteRewrite(4, RewriteCounts(rewritten_delete_files_count=4,
                                                   added_delete_files_count=4)),
            expiry=Expiry(10, 3, 1), orphans=OrphanSweep(2, ("a", "b"), 5)),
        skipped={"compaction": "gave way to concurrent writers 3 times"})
    assert _row(report) == (
        "lake.dim.products", "deletes, expiry, orphans", "4 → 4", "4 → 4", 4, 3, 2, "2.0 MB",
        "compaction: gave way to concurrent writers 3 times")


def test_a_dry_run_row_shows_the_plan_without_counts() -> None:
    report = MaintenanceReport("lake.a.b", True, TableStats(data_files=9, delete_files=3),
                               after=TableStats(data_files=9, delete_files=3),
                               actions=StepResults(deletes=DeleteRewrite(3)))
    assert _row(report) == ("lake.a.b", "deletes", "9", "3", "", 0, 0, "", "")


def test_a_hudi_row_shows_compaction_clean_archive_and_the_commits_kept() -> None:
    report = hr.HudiMaintenanceReport(
        "lake.dim.users", False, hr.HudiStats(pending_log_files=6, commits=12, disk_bytes=4096),
        after=hr.HudiStats(pending_log_files=0, commits=5, disk_bytes=2048),
        actions=hr.HudiStepResults(
            hr.HudiCompaction(6, 2, "20261128030200000"),
            hr.HudiClean(3, "20261128030102000", 4, {"20261128030102003": "flow log"}),
            hr.HudiArchive(8, 4, {"20261128030000111": "flow f"})))
    assert _hudi_row(report) == (
        "lake.dim.users", "compaction, clean, archive", "6 → 0", 4, 8, "12 → 5",
        "20261128030000111: flow f; 20261128030102003: flow log", "2 KB", "")
    dry = hr.HudiMaintenanceReport("lake.dim.users", True, hr.HudiStats(pending_log_files=6),
                                skipped={"hudi services": "flow f runs elsewhere"})
    assert _hudi_row(dry) == ("lake.dim.users", "-", "6", 0, 0, "0", "", "",
                              "hudi services: flow f runs elsewhere")
