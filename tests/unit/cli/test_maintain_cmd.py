"""``icetide maintain``'s row of a Hudi table: what the pass did, from its report."""

from __future__ import annotations

from icetide.cli.maintain_cmd import _hudi_row
from icetide.maintainer.report import HudiMaintenanceReport, HudiStats


def test_a_hudi_row_shows_compaction_clean_archive_and_the_commits_kept() -> None:
    report = HudiMaintenanceReport(
        "lake.dim.users", False, HudiStats(pending_log_files=6, commits=12, disk_bytes=4096),
        after=HudiStats(pending_log_files=0, commits=5, disk_bytes=2048),
        actions={"compaction": {"log_files": 6},
                 "clean": {"files": 4, "kept_for_consumers": {"20261128030102003": "flow log"}},
                 "archive": {"commits": 8, "kept_for_flows": {"20261128030000111": "flow f"}}})
    assert _hudi_row(report) == (
        "lake.dim.users", "compaction, clean, archive", "6 → 0", 4, 8, "12 → 5",
        "20261128030000111: flow f; 20261128030102003: flow log", "2 KB", "")
    dry = HudiMaintenanceReport("lake.dim.users", True, HudiStats(pending_log_files=6),
                                skipped={"hudi services": "flow f runs elsewhere"})
    assert _hudi_row(dry) == ("lake.dim.users", "-", "6", 0, 0, "0", "", "",
                              "hudi services: flow f runs elsewhere")
