"""``icetide maintain``'s table: one row per report, read from its typed step results."""

from __future__ import annotations

from icetide.cli.maintain_cmd import _row
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
