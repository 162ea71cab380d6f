"""The soak's verdict compares the first and last 10 minutes, worst and median minute."""

from __future__ import annotations

from benchmarks.soak.chart import verdict
from benchmarks.soak.sample import Minute


def minutes(dws: list[float | None]) -> list[Minute]:
    return [Minute(i, dws_p99=v, query_s={"count": 0.1 * (1 + i // 10)},
                   ods_rows=1_000_000 * (i + 1)) for i, v in enumerate(dws)]


def test_worst_and_median_minutes_of_both_windows() -> None:
    rows = minutes([None, 40.0, *[20.0] * 8, *[15.0] * 10, *[18.0] * 9, 30.0])
    text = verdict(rows)
    assert "worst minute: first 10 minutes 40.00s, last 10 30.00s (ratio 0.75; target ≤ 1.2)" \
        in text
    assert "median minute: 20.00s and 18.00s (ratio 0.90)" in text
    assert "`count` over ODS: minute 10 0.10s, end 0.30s (ratio 3.00" in text
    assert "(10,000,000 → 30,000,000 rows): ratio 1.00" in text


def test_too_short_a_run_says_so() -> None:
    assert verdict(minutes([10.0] * 5)) == "5 minutes: too short for the 10-minute comparisons."
