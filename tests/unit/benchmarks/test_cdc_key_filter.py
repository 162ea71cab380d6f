"""The key-filter benchmark's batch plan and report (no JVM)."""

from __future__ import annotations

from benchmarks.cdc.key_filter import _table, headline, sizes


def test_sizes_expand_rows_times_count() -> None:
    assert sizes("100x2,1000") == [100, 100, 1000]


def test_report_compares_the_medians_per_batch_size() -> None:
    runs = {20000: [{"rows": 1000, "seconds": 3.0, "write": 2.8},
                    {"rows": 1000, "seconds": 3.4, "write": 3.0},
                    {"rows": 1000, "seconds": 9.0, "write": 8.0}],
            200: [{"rows": 1000, "seconds": 1.6, "write": 1.4}]}
    assert headline(runs) == ("CDC batch seconds, at most 200 keys listed against 20,000: "
                              "1,000 rows 0.47×")
    assert "| 1,000 | 3.40 / 3.00 | 1.60 / 1.40 |" in _table(runs)
