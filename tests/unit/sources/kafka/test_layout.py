"""How a planned batch is laid out for the readers: non-empty ranges, task counts, and the
options of Spark's Kafka source."""

from __future__ import annotations

import json

from icetide.sources.kafka.jvm_reader import POLL_TIMEOUT_MS, source_options
from icetide.sources.kafka.layout import ranges, task_count


def test_ranges_keep_what_has_offsets_to_read() -> None:
    assert ranges({0: 5, 1: 7}, {0: 9, 1: 7, 2: 3}) == {0: (5, 9)}
    assert ranges({}, {0: 4}) == {}


def test_task_count_shares_short_ranges_and_splits_long_ones() -> None:
    assert task_count([], 2) == 0
    assert task_count([0, 0], 2) == 0
    assert task_count([10, 10, 10, 10], slots=2) == 2  # 4 partitions, 2 slots: 2 files
    assert task_count([10], slots=2) == 1  # never more tasks than slices
    assert task_count([1_000, 1_000], slots=2, slice_size=300) == 7  # ceil(2000 / 300)
    assert task_count([900, 100], slots=2, slice_size=300) == 4  # 4 slices, 1000 / 300 → 4


def test_source_options_name_every_range_end_exclusive() -> None:
    options = source_options("clicks", {0: (5, 9), 2: (0, 3)}, tasks=2)
    assert json.loads(options["assign"]) == {"clicks": [0, 2]}
    assert json.loads(options["startingOffsets"]) == {"clicks": {"0": 5, "2": 0}}
    assert json.loads(options["endingOffsets"]) == {"clicks": {"0": 9, "2": 3}}
    assert options["failOnDataLoss"] == "true"
    assert options["groupIdPrefix"] == "icetide-reader"
    assert options["kafkaConsumer.pollTimeoutMs"] == str(POLL_TIMEOUT_MS)
    assert "minPartitions" not in options
    assert source_options("t", {0: (0, 900)}, tasks=3)["minPartitions"] == "3"
