"""What ``icetide describe`` shows of a table's snapshot summaries, readable.

The adapters print; which summary keys are icetide's markers and which of them hold
epoch milliseconds is known here, over the model's marker keys, not in each adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from icetide.model.markers import COMMITTED_AT, MAX_EVENT_TIME
from icetide.query.catalog_info import TableDescription

__all__ = ["TableDescription", "readable_summary"]

#: Snapshot summary keys holding epoch milliseconds: shown as ISO timestamps too.
_TIME_KEYS = (COMMITTED_AT, MAX_EVENT_TIME)


def _readable_value(key: str, value: str) -> str:
    if key in _TIME_KEYS and value.isdigit():
        stamp = datetime.fromtimestamp(int(value) / 1000, UTC).isoformat(timespec="milliseconds")
        return f"{stamp} ({value})"
    return value


def readable_summary(summary: Mapping[str, str]) -> list[tuple[str, str]]:
    """A snapshot summary as ``(key, value)`` lines: icetide's keys first, then the rest,
    each sorted, ``operation`` left out (shown on its own), epoch-millisecond markers
    with their ISO-8601 UTC time."""
    keys = sorted(summary, key=lambda k: (not k.startswith("icetide."), k))
    return [(k, _readable_value(k, str(summary[k]))) for k in keys if k != "operation"]
