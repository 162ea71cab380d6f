"""Batches sized by time: the records cap a flow's next batch gets."""

from __future__ import annotations

from icetide.flows.sizing import COLD_SHARE, FLOOR, INITIAL_RATE, BatchSizer


def test_without_a_time_bound_the_ceiling_alone_caps() -> None:
    assert BatchSizer(ceiling=700).cap(None) == 700
    assert BatchSizer().cap(None) is None


def test_before_any_history_an_assumed_rate_sizes_the_first_batch() -> None:
    assert BatchSizer().cap(5.0) == int(INITIAL_RATE * 5.0)
    assert BatchSizer(ceiling=20_000).cap(5.0) == 20_000  # the flow's own cap still holds


def test_a_marker_seeds_the_rate_at_a_restart_discounted_for_a_cold_jvm() -> None:
    sizer = BatchSizer()
    sizer.seed(rows_in=8_000, batch_ms=2_000)  # 4,000 records/s, warm
    assert sizer.rate == 4_000 * COLD_SHARE and sizer.cap(5.0) == int(20_000 * COLD_SHARE)
    sizer.seed(rows_in=1, batch_ms=1_000)  # a rate once known is not replaced by a marker
    assert sizer.rate == 4_000 * COLD_SHARE


def test_a_filled_batch_measures_the_rate_a_caught_up_one_only_raises_it() -> None:
    sizer = BatchSizer(rate=4_000.0)
    sizer.observe(500, 1.0, filled=False)  # few records, fixed costs: a lower bound
    assert sizer.rate == 4_000
    sizer.observe(10_000, 1.0, filled=False)
    assert sizer.rate == 10_000
    sizer.observe(20_000, 10.0, filled=True)  # a full batch that took long: it counts
    assert sizer.rate == 6_000


def test_the_cap_moves_at_most_four_times_up_and_half_down_a_batch() -> None:
    sizer = BatchSizer(rate=1_000.0)
    assert sizer.cap(5.0) == 5_000
    sizer.rate = 1_000_000.0
    assert sizer.cap(5.0) == 20_000
    sizer.rate = 1.0
    assert sizer.cap(5.0) == 10_000


def test_the_cap_never_falls_below_the_floor() -> None:
    sizer = BatchSizer(rate=10.0)
    assert sizer.cap(0.5) == FLOOR
    assert BatchSizer(rate=10.0, ceiling=300).cap(0.5) == 300  # a smaller own cap wins


def test_no_seconds_or_records_teach_nothing() -> None:
    sizer = BatchSizer(rate=2_000.0)
    sizer.observe(0, 3.0, filled=False)
    sizer.observe(100, 0.0, filled=True)
    assert sizer.rate == 2_000
