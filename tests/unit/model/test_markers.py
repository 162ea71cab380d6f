"""Snapshot-summary markers round-trip and compare positions canonically."""

from __future__ import annotations

from icetide.model.keys import MarkerKeys
from icetide.model.markers import Marker, same_position


def test_round_trip() -> None:
    m = Marker("clickevent", {"kafka:t": {"0": 5}}, {"kafka:t": {"0": 9, "1": 3}}, rows=4,
               rows_in=7, dlq_rows=3, max_event_time_ms=1700000000000, batch_ms=12,
               committed_at_ms=1700000000500, extra={"freshness-mode": "continuous"})
    summary = m.to_summary()
    assert all(isinstance(v, str) for v in summary.values())
    assert Marker.from_summary({**summary, "added-records": "4"}) == m


def test_a_marker_without_its_rows_takes_icebergs_count_of_the_rows_added() -> None:
    """A changelog append counts its rows as it writes them, after its marker is set."""
    summary = {k: v for k, v in Marker("f", {}, {"k": 1}, rows=9).to_summary().items()
               if k != MarkerKeys.ROWS}
    found = Marker.from_summary({**summary, "added-records": "4"})
    assert found is not None and found.rows == 4
    assert Marker.from_summary({**summary, "added-records": "4", MarkerKeys.ROWS: "9"}
                               ).rows == 9  # type: ignore[union-attr]


def test_no_marker_in_foreign_snapshot() -> None:
    assert Marker.from_summary({"added-records": "4"}) is None


def test_positions_are_canonical() -> None:
    a = Marker("f", {}, {"k": {"1": 2, "0": 1}}).to_summary()[MarkerKeys.POS]
    b = Marker("f", {}, {"k": {"0": 1, "1": 2}}).to_summary()[MarkerKeys.POS]
    assert a == b
    assert same_position({"k": {"0": 1, "1": 2}}, {"k": {"1": 2, "0": 1}})
    assert not same_position({"k": {"0": 1}}, {"k": {"0": 2}})
