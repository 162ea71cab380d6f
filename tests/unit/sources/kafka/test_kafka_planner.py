"""Pure planning math of the Kafka source: no broker needed."""

from __future__ import annotations

import random

import pytest

from icetide.config import KafkaConfig
from icetide.errors import OffsetOutOfRangeError, SourceError
from icetide.sources.kafka.client import resolve_bootstrap
from icetide.sources.kafka.planner import (
    compute_lag,
    encode_position,
    fair_caps,
    normalize_position,
    plan_exact,
    plan_offsets,
)
from icetide.sources.kafka.reader import Slice, make_slices, pack_slices

MARKS = {0: (0, 100), 1: (10, 50), 2: (0, 0)}


def test_position_round_trip() -> None:
    assert normalize_position("t", {"1": 5, "0": 3}) == {1: 5, 0: 3}
    assert normalize_position("t", {2: 7}) == {2: 7}
    assert normalize_position("t", None) == {}
    assert encode_position({10: 1, 2: 3}) == {"2": 3, "10": 1}
    assert list(encode_position({10: 1, 2: 3})) == ["2", "10"]


@pytest.mark.parametrize("bad", [{"x": 1}, {"0": -1}, {"0": "5"}, {"0": True}, {"-1": 3}, [1, 2]])
def test_position_rejects_garbage(bad: object) -> None:
    with pytest.raises(SourceError, match="'t'"):
        normalize_position("t", bad)


def test_fair_caps_equal_split_and_remainder() -> None:
    assert fair_caps({0: 100, 1: 100, 2: 100}, 10) == {0: 3, 1: 3, 2: 4}
    assert fair_caps({0: 100, 1: 100}, 0) == {0: 0, 1: 0}


def test_fair_caps_small_partitions_take_all_and_free_capacity() -> None:
    caps = fair_caps({0: 2, 1: 1000, 2: 1000, 3: 5}, 100)
    assert caps[0] == 2 and caps[3] == 5
    assert caps[1] + caps[2] == 93 and abs(caps[1] - caps[2]) <= 1


def test_fair_caps_everything_fits() -> None:
    assert fair_caps({0: 3, 1: 4}, 1000) == {0: 3, 1: 4}


def test_fair_caps_properties_random() -> None:
    rng = random.Random(5)
    for _ in range(500):
        avail = {p: rng.choice([0, 1, rng.randint(0, 1000)]) for p in range(rng.randint(1, 8))}
        cap = rng.randint(0, 3000)
        caps = fair_caps(avail, cap)
        assert sum(caps.values()) == min(cap, sum(avail.values()))
        assert all(0 <= caps[p] <= avail[p] for p in avail)
        unsaturated = [caps[p] for p in avail if caps[p] < avail[p]]
        if unsaturated:  # max-min fair: nobody capped gets less than anyone else by >1
            assert max(caps.values()) - min(unsaturated) <= 1


def test_fair_caps_rejects_negative() -> None:
    with pytest.raises(SourceError, match="-1"):
        fair_caps({0: 1}, -1)


def test_plan_from_scratch_starts_at_low_watermarks() -> None:
    plan = plan_offsets("t", {}, MARKS, 1000)
    assert plan.start == {0: 0, 1: 10, 2: 0}
    assert plan.end == {0: 100, 1: 50, 2: 0}
    assert plan.records == 140


def test_plan_caps_total_and_spreads() -> None:
    plan = plan_offsets("t", {0: 0, 1: 10, 2: 0}, MARKS, 30)
    assert plan.records == 30
    assert plan.end == {0: 15, 1: 25, 2: 0}


def test_plan_new_partition_starts_at_low_watermark() -> None:
    marks = {0: (0, 100), 1: (0, 100), 2: (7, 20)}  # partition 2 was added
    plan = plan_offsets("t", {0: 100, 1: 90}, marks, 1000)
    assert plan.start == {0: 100, 1: 90, 2: 7}
    assert plan.end == {0: 100, 1: 100, 2: 20}
    assert any("new partitions [2]" in n for n in plan.notes)


def test_out_of_range_below_low_fails_by_default() -> None:
    with pytest.raises(OffsetOutOfRangeError) as err:
        plan_offsets("clicks", {0: 0, 1: 3}, MARKS, 100)
    text = str(err.value)
    for part in ("'clicks'", "partition 1", "offset 3", "[10, 50)", "kafka.offset_out_of_range",
                 "earliest", "latest"):
        assert part in text


def test_out_of_range_above_high_fails_by_default() -> None:
    with pytest.raises(OffsetOutOfRangeError, match="offset 500 is above the high watermark"):
        plan_offsets("t", {0: 500}, MARKS, 100)


def test_out_of_range_earliest_and_latest() -> None:
    early = plan_offsets("t", {0: 500, 1: 3}, MARKS, 1000, policy="earliest")
    assert early.start == {0: 0, 1: 10, 2: 0}
    late = plan_offsets("t", {0: 500, 1: 3}, MARKS, 1000, policy="latest")
    assert late.start == {0: 100, 1: 50, 2: 0} and late.records == 0
    assert any("reset 500 -> 100" in n for n in late.notes)
    # a reset forward names how many offsets it skipped; one backward (recreated) does not
    assert "partition 1 reset 3 -> 10 (earliest, 7 offsets skipped)" in early.notes
    assert "partition 0 reset 500 -> 0 (earliest)" in early.notes
    assert "partition 1 reset 3 -> 50 (latest, 47 offsets skipped)" in late.notes


def test_vanished_partition() -> None:
    with pytest.raises(OffsetOutOfRangeError, match="partition 9"):
        plan_offsets("t", {9: 4}, MARKS, 10)
    plan = plan_offsets("t", {9: 4, 0: 0}, MARKS, 10, policy="earliest")
    assert 9 not in plan.end


def test_bad_policy_named() -> None:
    with pytest.raises(SourceError, match="'sometimes'"):
        plan_offsets("t", {}, MARKS, 10, policy="sometimes")  # type: ignore[arg-type]


def test_plan_exact() -> None:
    plan = plan_exact("t", {0: 5, 1: 20}, {0: 60, 1: 30, 2: 0}, MARKS)
    assert plan.start == {0: 5, 1: 20, 2: 0} and plan.records == 65


def test_plan_exact_new_partition_and_errors() -> None:
    assert plan_exact("t", {0: 5}, {0: 5, 1: 30}, MARKS).start == {0: 5, 1: 10}
    with pytest.raises(SourceError, match="after end"):
        plan_exact("t", {0: 50}, {0: 40}, MARKS)
    with pytest.raises(OffsetOutOfRangeError, match=r"\[90, 120\)"):
        plan_exact("t", {0: 90}, {0: 120}, MARKS, policy="earliest")
    with pytest.raises(OffsetOutOfRangeError, match=r"kafka\.offset_out_of_range"):
        plan_exact("t", {1: 0}, {1: 30}, MARKS)
    assert plan_exact("t", {1: 0}, {1: 30}, MARKS, policy="earliest").start == {1: 10}


def test_lag() -> None:
    lag = compute_lag("t", {0: 40, 1: 0}, MARKS)
    assert lag == {"topic": "t", "partitions": {"0": 60, "1": 40, "2": 0}, "total": 100}


def test_slices() -> None:
    slices = make_slices("t", {0: 0, 1: 5}, {0: 10, 1: 5, 2: 3}, slice_size=4)
    assert slices == [Slice("t", 0, 0, 4), Slice("t", 0, 4, 8), Slice("t", 0, 8, 10)]
    with pytest.raises(SourceError, match="slice_size"):
        make_slices("t", {}, {0: 1}, 0)


def _loads(groups: list[list[Slice]]) -> list[int]:
    return [sum(s.end - s.start for s in g) for g in groups]


def test_short_slices_share_the_task_slots() -> None:
    small = [Slice("t", p, 0, 10_000) for p in range(4)]
    groups = pack_slices(small, slots=2)
    assert _loads(groups) == [20_000, 20_000]
    assert sorted(s.partition for g in groups for s in g) == [0, 1, 2, 3]  # each once
    assert pack_slices(small, slots=8) == [[s] for s in small]  # a cluster: a task each
    assert pack_slices(small[:1], slots=2) == [small[:1]]
    assert pack_slices([], slots=2) == []


def test_long_slices_keep_a_task_each() -> None:
    full = [Slice("t", p, 0, 250_000) for p in range(3)]
    tiny = [Slice("t", 3, 0, 5), Slice("t", 4, 0, 7)]
    groups = pack_slices(full + tiny, slots=2, slice_size=250_000)
    assert len(groups) == 4 and sorted(_loads(groups)) == [12, 250_000, 250_000, 250_000]
    halves = [Slice("t", p, 0, 125_000) for p in range(4)]
    assert _loads(pack_slices(halves, slots=2, slice_size=250_000)) == [250_000, 250_000]


def test_resolve_bootstrap() -> None:
    assert resolve_bootstrap(KafkaConfig()) == "127.0.0.1:9092"
    assert resolve_bootstrap(KafkaConfig(bootstrap="k:1")) == "k:1"
    assert resolve_bootstrap(KafkaConfig(bootstrap="k:1"), "o:2") == "o:2"
