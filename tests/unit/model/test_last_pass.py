"""The last maintenance pass, a table property: read and written as earlier versions did."""

from __future__ import annotations

import json

import pytest

from icetide.model.last_pass import LastPass

#: The property as the maintainer wrote it before LastPass (json.dumps of a dict).
WRITTEN = [
    json.dumps({"at_ms": 1764000000000, "actions": ["compaction", "expiry"],
                "orphans_at_ms": 1763900000000}),
    json.dumps({"at_ms": 1764000000000, "actions": [], "orphans_at_ms": 0}),
    '{"at_ms": 1764000000123, "actions": ["deletes", "orphans"], "orphans_at_ms": 1764000000123}',
]


@pytest.mark.parametrize("text", WRITTEN)
def test_records_already_on_tables_round_trip_byte_for_byte(text: str) -> None:
    assert LastPass.parse(text).dump() == text


def test_a_record_reads_as_typed_values() -> None:
    record = LastPass.parse(WRITTEN[0])
    assert record == LastPass(1764000000000, ("compaction", "expiry"), 1763900000000)


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '{"at_ms": "soon"}'])
def test_no_or_an_unreadable_record_is_no_pass(text: str | None) -> None:
    record = LastPass.parse(text)
    assert (record.at_ms, record.actions, record.orphans_at_ms) == (None, (), 0)


def test_a_partial_record_keeps_what_it_has() -> None:
    assert LastPass.parse('{"at_ms": 5.0}') == LastPass(at_ms=5)
    assert LastPass.parse('{"orphans_at_ms": 7, "actions": ["expiry"]}') == LastPass(
        None, ("expiry",), 7)
