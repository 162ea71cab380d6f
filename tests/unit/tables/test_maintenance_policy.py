"""MaintenanceSchedule policy and the consumers' retention floor."""

from __future__ import annotations

import pytest

from icetide.config import MaintenanceConfig, load_settings
from icetide.errors import ConfigError, MaintenanceError
from icetide.tables.maintenance_policy import (
    FlowMark,
    compaction_options,
    delete_rewrite_options,
    expiry_cutoff,
    full_size_bytes,
    needed_snapshots,
    needs_full_compaction,
    rewrite_strategy,
    small_file_bytes,
    table_policy,
)

BASE = MaintenanceConfig()


def test_table_properties_override_the_defaults() -> None:
    policy = table_policy(BASE, {"icetide.maintenance.sort-order": "zorder(a, b)",
                                 "icetide.maintenance.min_input_files": "3",
                                 "icetide.maintenance.interval": "2 minutes",
                                 "write.format.default": "parquet"})
    assert policy.min_input_files == 3 and policy.interval == 120.0
    assert rewrite_strategy(policy, table_sorted=False) == ("sort", "zorder(a, b)")
    assert rewrite_strategy(BASE, table_sorted=False) == ("binpack", None)
    assert rewrite_strategy(BASE, table_sorted=True) == ("sort", None)


def test_a_bad_table_property_names_itself() -> None:
    with pytest.raises(MaintenanceError, match=r"icetide\.maintenance\.orphan-age"):
        table_policy(BASE, {"icetide.maintenance.orphan-age": "10s"})
    with pytest.raises(MaintenanceError, match=r"icetide\.maintenance\.no-such"):
        table_policy(BASE, {"icetide.maintenance.no-such": "1"})


def test_a_per_table_switch_is_refused_not_ignored() -> None:
    refused = r"icetide\.maintenance\.enabled.*UNSET TBLPROPERTIES"
    with pytest.raises(MaintenanceError, match=refused):
        table_policy(BASE, {"icetide.maintenance.enabled": "false"})


def test_orphan_age_below_one_hour_is_refused_in_config() -> None:
    with pytest.raises(ConfigError, match=r"ORPHAN_AGE.*3600"):
        load_settings(None, environ={"ICETIDE_MAINTENANCE__ORPHAN_AGE": "60"})


def test_compaction_options_apply_deletes_when_heavy() -> None:
    assert "delete-ratio-threshold" not in compaction_options(BASE, deletes_heavy=False)
    options = compaction_options(BASE, deletes_heavy=True)
    assert options["delete-ratio-threshold"] == "0.1"
    assert options["remove-dangling-deletes"] == "true"
    assert options["partial-progress.enabled"] == "true"


def test_a_routine_compaction_rewrites_only_small_files() -> None:
    policy = MaintenanceConfig(target_file_size=128 << 20)
    assert small_file_bytes(policy) == 8 << 20 and full_size_bytes(policy) == 96 << 20
    routine = compaction_options(policy, deletes_heavy=False, full=False)
    assert routine["min-file-size-bytes"] == str(8 << 20)
    assert "min-file-size-bytes" not in compaction_options(policy, deletes_heavy=False)


def test_a_table_below_one_target_file_is_compacted_in_one_commit() -> None:
    policy = MaintenanceConfig(target_file_size=128 << 20)
    tiny = compaction_options(policy, deletes_heavy=True, table_bytes=100_000)
    assert tiny["partial-progress.enabled"] == "false"
    assert tiny["max-concurrent-file-group-rewrites"] == "4"
    big = compaction_options(policy, deletes_heavy=True, table_bytes=128 << 20)
    assert big["partial-progress.enabled"] == "true"
    assert big["max-concurrent-file-group-rewrites"] == "1"


def test_a_routine_pass_over_a_large_table_rewrites_one_target_file_per_group() -> None:
    """One group at a time, each one target file: one task, one core (flows keep the rest);
    a full pass (medium files) and a table below one target file keep whole groups."""
    policy = MaintenanceConfig(target_file_size=128 << 20)
    for table_bytes in (None, 1 << 40):
        routine = compaction_options(policy, False, full=False, table_bytes=table_bytes)
        assert routine["max-file-group-size-bytes"] == str(128 << 20)
        assert routine["max-concurrent-file-group-rewrites"] == "1"
    assert "max-file-group-size-bytes" not in compaction_options(policy, False)
    assert "max-file-group-size-bytes" not in compaction_options(
        policy, False, full=False, table_bytes=100_000)


def test_delete_files_of_a_small_table_are_rewritten_in_one_commit() -> None:
    policy = MaintenanceConfig(target_file_size=128 << 20)
    tiny = delete_rewrite_options(policy, table_bytes=100_000)
    assert tiny == {"rewrite-all": "true", "partial-progress.enabled": "false",
                    "partial-progress.max-commits": "10",
                    "max-concurrent-file-group-rewrites": "4"}
    for big in (delete_rewrite_options(policy, 128 << 20), delete_rewrite_options(policy)):
        assert big["partial-progress.enabled"] == "true" and big["rewrite-all"] == "true"
        assert big["max-concurrent-file-group-rewrites"] == "1"


def test_medium_files_are_merged_once_a_partition_has_a_full_file_of_them() -> None:
    policy = MaintenanceConfig(target_file_size=128 << 20)
    assert not needs_full_compaction([], policy)
    assert not needs_full_compaction([100 << 20, 127 << 20], policy)  # no partition has 128
    assert needs_full_compaction([10 << 20, 128 << 20], policy)


def test_needed_snapshots_are_newest_markers_and_consumer_positions() -> None:
    marks = [
        FlowMark("lake.db.up", "ingest", 7, 7000, ({"k": 1}, {"k": 2})),
        FlowMark("lake.db.down", "agg", 3, 3000, ({"iceberg:lake.db.up": {"snapshot": 4}},
                                                  {"iceberg:lake.db.up": {"snapshot": 5}})),
        FlowMark("lake.db.other", "x", 9, 9000, ({"iceberg:lake.db.zzz": {"snapshot": 1}},)),
    ]
    need = needed_snapshots("lake.db.up", marks)
    assert set(need) == {7, 4, 5}
    assert "agg" in need[4] and "ingest" in need[7]


def test_expiry_cutoff_keeps_needed_snapshots_within_max_lag() -> None:
    now = 10_000_000
    policy = MaintenanceConfig(snapshot_retention=100, max_consumer_lag=1000)
    assert expiry_cutoff(now, policy, {}) == now - 100_000
    assert expiry_cutoff(now, policy, {1: now - 500_000}) == now - 500_000
    assert expiry_cutoff(now, policy, {1: now - 2_000_000}) == now - 100_000  # too far behind
    unbounded = policy.model_copy(update={"max_consumer_lag": None})
    assert expiry_cutoff(now, unbounded, {1: 5}) == 5
