"""The ingest benchmark's second pass: (a) and (c) read from given offsets."""

from __future__ import annotations

from benchmarks.ingest.rawbench import from_offsets


def test_reads_start_at_the_given_offsets_never_below_the_low_watermark() -> None:
    marks = {0: (5, 100), 1: (0, 50), 2: (10, 20)}
    assert from_offsets(marks, {0: 80, 1: 0, 2: 3}) == {0: (80, 100), 1: (0, 50), 2: (10, 20)}


def test_without_offsets_the_whole_topic_is_read() -> None:
    assert from_offsets({0: (5, 100)}, None) == {0: (5, 100)}
