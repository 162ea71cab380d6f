"""app.describe: a snapshot summary as the describe command shows it."""

from __future__ import annotations

from icetide.app.describe import readable_summary
from icetide.model.markers import COMMITTED_AT, MAX_EVENT_TIME


def test_icetide_keys_first_times_readable_operation_left_out() -> None:
    summary = {
        "operation": "append",
        "added-records": "3",
        COMMITTED_AT: "1700000000000",
        MAX_EVENT_TIME: "not-a-number",
        "icetide.flow": "ods.t",
    }
    assert readable_summary(summary) == [
        (COMMITTED_AT, "2023-11-14T22:13:20.000+00:00 (1700000000000)"),
        ("icetide.flow", "ods.t"),
        (MAX_EVENT_TIME, "not-a-number"),
        ("added-records", "3"),
    ]
