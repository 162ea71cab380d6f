"""The freshness trace follows a probe through flows with one input and with two; the
cadence of the tables without a target counts the window's edges."""

from __future__ import annotations

from benchmarks.freshness.trace import Commit, longest_gap, next_hits


def _commit(seq: int, end: dict[str, object]) -> Commit:
    return Commit(snapshot_id=1000 + seq, sequence=seq, committed_ms=seq * 1000, end=end)


def test_a_two_input_flow_is_traced_by_its_position_in_the_upstream_table() -> None:
    dwd_seq = {11: 1, 12: 2, 13: 3}  # dwd.click_wide snapshot id -> sequence number
    dws = [
        _commit(1, {"iceberg:lake.dwd.click_wide": {"snapshot": 11},
                    "iceberg:lake.dws.product_user__changelog": {"snapshot": 99}}),
        # only the changelog moved: the click_wide position stays at 11
        _commit(2, {"iceberg:lake.dwd.click_wide": {"snapshot": 11},
                    "iceberg:lake.dws.product_user__changelog": {"snapshot": 98}}),
        _commit(3, {"iceberg:lake.dwd.click_wide": {"snapshot": 13},
                    "iceberg:lake.dws.product_user__changelog": {"snapshot": 98}}),
    ]
    hits = [_commit(1, {}), _commit(2, {}), _commit(3, {}), None]
    found = next_hits("dwd.click_wide", dwd_seq, dws, hits)
    assert [c.sequence if c else None for c in found] == [1, 3, 3, None]


def test_a_one_input_flow_and_a_commit_without_that_input() -> None:
    dws = [_commit(1, {"iceberg:lake.dws.product_user__changelog": {"snapshot": 5}}),
           _commit(2, {"iceberg:lake.dwd.click_wide": {"snapshot": 7}})]
    found = next_hits("dwd.click_wide", {7: 4}, dws, [_commit(4, {})])
    assert [c.sequence if c else None for c in found] == [2]


def test_the_longest_gap_counts_from_the_window_start_and_to_its_end() -> None:
    assert longest_gap([500, 12_000, 14_000, 99_000], 1_000, 60_000) == (2, 46.0)
    assert longest_gap([], 1_000, 31_000) == (0, 30.0)  # no commit: stale all along
