"""What a maintenance pass keeps of a Hudi table: the counts Hudi's cleaner and archiver
get (the policy's history, consumers' positions, writers' newest markers), and what the
table's file names say (file groups, log files awaiting compaction, files a clean frees)."""

from __future__ import annotations

from icetide.config import MaintenanceConfig
from icetide.tables import hudi_retention as hr
from icetide.tables.maintenance_policy import FlowMark

NOW = 1_000_000_000
#: ten commits, one a second, the newest completed at NOW - 1 s
COMMITS = [hr.HudiCommit(f"r{n:02d}", f"c{n:02d}", NOW - (10 - n) * 1000) for n in range(10)]
OLD = MaintenanceConfig(snapshot_retention=0, retain_last=1)


def test_without_flows_the_policy_decides() -> None:
    assert hr.hudi_retention(COMMITS, {}, {}, NOW, OLD).clean_commits == 1
    assert hr.hudi_retention(COMMITS, {}, {}, NOW, OLD.model_copy(
        update={"retain_last": 4})).clean_commits == 4
    young = OLD.model_copy(update={"snapshot_retention": 3.5})  # c07, c08, c09
    kept = hr.hudi_retention(COMMITS, {}, {}, NOW, young)
    assert (kept.clean_commits, kept.archive_min, kept.archive_max) == (3, 4, 5)
    assert hr.hudi_retention(COMMITS[:2], {}, {}, NOW, OLD.model_copy(
        update={"retain_last": 20})).clean_commits == 2


def test_a_consumers_position_is_cleaned_and_archived_after_never_before() -> None:
    kept = hr.hudi_retention(COMMITS, {"c04": "flow log"}, {}, NOW, OLD)
    assert kept.clean_commits == 6  # c04 .. c09: the file slices a read as of c04 needs
    assert kept.archive_min == 7  # Hudi keeps more instants than the cleaner's commits
    assert kept.kept_for == {"c04": "flow log"}
    assert hr.earliest_retained(COMMITS, kept.clean_commits) == "r04"
    assert kept.archivable(10) == 3 and kept.archivable(8) == 0


def test_a_consumer_further_behind_than_max_consumer_lag_is_not_waited_for() -> None:
    lagging = OLD.model_copy(update={"max_consumer_lag": 5.5})
    assert hr.hudi_retention(COMMITS, {"c02": "flow old"}, {}, NOW, lagging).clean_commits == 1
    assert hr.hudi_retention(COMMITS, {"c05": "flow new"}, {}, NOW, lagging).clean_commits == 5
    never = OLD.model_copy(update={"max_consumer_lag": None})
    assert hr.hudi_retention(COMMITS, {"c02": "flow old"}, {}, NOW, never).clean_commits == 8


def test_a_position_no_longer_in_the_timeline_keeps_nothing() -> None:
    kept = hr.hudi_retention(COMMITS, {"gone": "flow lost"}, {}, NOW, OLD)
    assert (kept.clean_commits, kept.kept_for) == (1, {})


def test_a_writers_newest_marker_bounds_archival_not_cleaning() -> None:
    kept = hr.hudi_retention(COMMITS, {}, {"c01": "flow idle"}, NOW, OLD)
    assert (kept.clean_commits, kept.archive_min) == (1, 9)
    assert kept.kept_for == {"c01": "flow idle"}


def test_consumer_positions_are_read_from_every_flows_marker() -> None:
    marks = [FlowMark("lake.db.log", "log", 1, 0, ({"hudi:lake.db.t": {"instant": "c03"}},
                                                   {"hudi:lake.db.t": {"instant": "c05"}})),
             FlowMark("lake.db.x", "x", 2, 0, ({"hudi:lake.db.other": {"instant": "c01"}},)),
             FlowMark("lake.db.y", "y", 3, 0, ({"hudi:lake.db.t": {"instant": None}},))]
    assert hr.consumer_positions("lake.db.t", marks) == {
        "c03": "flow log (reads lake.db.t, committed to lake.db.log)",
        "c05": "flow log (reads lake.db.t, committed to lake.db.log)"}


GROUP = "a1c77514-ce99-442e-95df-797575059fc3-0"


def test_hudi_file_names_are_read() -> None:
    assert hr.parse_file(f"{GROUP}_0-26-29_20261128025005576.parquet") == hr.HudiFile(
        GROUP, "20261128025005576", True)
    assert hr.parse_file(f".{GROUP}_20261128025020082.log.1_0-48-61") == hr.HudiFile(
        GROUP, "20261128025020082", False)
    assert hr.parse_file(f".{GROUP}_20261128025030542.log.1_0-123-173.cdc") == hr.HudiFile(
        GROUP, "20261128025030542", False, cdc=True)
    for other in (f".{GROUP}_20261128025020082.log.1_0-48-61.crc", ".hoodie_partition_metadata",
                  f".{GROUP}_0-26-29_20261128025005576.parquet.crc", "notes.txt"):
        assert hr.parse_file(other) is None


def _files() -> list[hr.HudiFile]:
    """Group g: base at 10, logs 11-12, compacted at 13, log 14, compacted at 15, log 16;
    group h: one base at 12 and a CDC log."""
    g = [hr.HudiFile("g", str(n), n in (10, 13, 15)) for n in range(10, 17)]
    return [*g, hr.HudiFile("h", "12", True), hr.HudiFile("h", "12", False, cdc=True)]


def test_file_counts_tell_what_a_compaction_merges() -> None:
    assert hr.file_counts(_files()) == {"file_groups": 2, "base_files": 4, "log_files": 4,
                                        "pending_log_files": 1, "pending_file_groups": 1}
    assert hr.file_counts([hr.HudiFile("n", "5", False)])["pending_log_files"] == 1  # no base yet


def test_a_clean_frees_the_slices_before_the_one_a_read_as_of_the_earliest_commit_needs() -> None:
    # g's base 10 and its logs 11, 12: a read as of 14 needs the slice of 13
    assert hr.cleanable(_files(), "14") == 3
    assert hr.cleanable(_files(), "16") == 5  # and base 13 with its log 14
    assert hr.cleanable(_files(), "13") == 0  # a read as of 13 starts from base 10
