"""Driver-side planning of Kafka offset ranges.

A *position* is ``{"<partition>": next_offset}`` (string keys, JSON-friendly). Planning
turns a committed position plus the broker's watermarks into half-open per-partition
ranges ``[start, end)``:

* partitions the position does not know yet (new partitions, or a flow's first batch)
  start at their low watermark;
* an offset below the low watermark (deleted by retention) or above the high watermark
  (the topic was recreated, or an in-memory broker restarted) is *out of range* and
  handled by the policy ``kafka.offset_out_of_range``: ``fail`` (default) raises
  :class:`OffsetOutOfRangeError`, ``earliest`` / ``latest`` restart at the low / high
  watermark and log a warning;
* the batch is capped at ``max_records`` in total, spread fairly (water-filling) over the
  partitions with data, so one busy partition cannot starve the others.

The functions here are pure and need no broker; :mod:`icetide.sources.kafka.watermarks`
asks the broker for the watermarks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from icetide.errors import OffsetOutOfRangeError, SourceError, listed

log = logging.getLogger(__name__)

Policy = Literal["earliest", "latest", "fail"]
Watermarks = Mapping[int, tuple[int, int]]  # partition → (low, high)
_POLICIES = ("earliest", "latest", "fail")


#: Reserved key of a position: the cluster id its offsets belong to.
CLUSTER_KEY = "cluster"


def normalize_position(topic: str, position: Any) -> dict[int, int]:
    """``{"0": 12, "1": 7}`` (or int keys) → ``{0: 12, 1: 7}``; rejects anything else."""
    if position is None:
        return {}
    if not isinstance(position, Mapping):
        raise SourceError(
            f"Kafka position for topic {topic!r} must be a mapping like {{\"0\": 42}}, "
            f"got {position!r}: pass the `end` of a previous batch or initial_position()"
        )
    out: dict[int, int] = {}
    for key, value in position.items():
        if key == CLUSTER_KEY:
            continue
        try:
            part = int(key)
        except (TypeError, ValueError):
            part = -1
        if part < 0 or isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SourceError(
                f"Kafka position for topic {topic!r} has an invalid entry {key!r}: {value!r}; "
                "keys are partition numbers and values non-negative offsets"
            )
        out[part] = value
    return out


def encode_position(offsets: Mapping[int, int]) -> dict[str, int]:
    """``{0: 12}`` → ``{"0": 12}``, ordered by partition."""
    return {str(p): int(offsets[p]) for p in sorted(offsets)}


def position_cluster(position: Any) -> str | None:
    """The Kafka cluster id a position was taken on (``None`` for older positions)."""
    if isinstance(position, Mapping):
        value = position.get(CLUSTER_KEY)
        return str(value) if value is not None else None
    return None


def _out_of_range_message(topic: str, part: int, offset: int, low: int, high: int) -> str:
    where = "below the low watermark (deleted by retention?)" if offset < low else (
        "above the high watermark (topic recreated or broker data lost?)")
    return (
        f"topic {topic!r} partition {part}: committed offset {offset} is {where}; "
        f"the broker has offsets [{low}, {high}). Set kafka.offset_out_of_range to "
        "'earliest' (re-read from the low watermark) or 'latest' (skip to the high "
        "watermark), e.g. ICETIDE_KAFKA__OFFSET_OUT_OF_RANGE=earliest"
    )


def resolve_start(
    topic: str, start: Mapping[int, int], watermarks: Watermarks, policy: Policy
) -> tuple[dict[int, int], list[str]]:
    """Apply new-partition and out-of-range rules; returns the start and notes on changes."""
    if policy not in _POLICIES:
        raise SourceError(
            f"kafka.offset_out_of_range is {policy!r}: use one of {', '.join(_POLICIES)}"
        )
    resolved: dict[int, int] = {}
    notes: list[str] = []
    for part in sorted(set(start) - set(watermarks)):
        msg = (f"topic {topic!r} partition {part} (committed offset {start[part]}) no longer "
               f"exists; the topic has partitions {listed(sorted(watermarks))}")
        if policy == "fail":
            raise OffsetOutOfRangeError(
                msg + ". The topic was probably recreated: set kafka.offset_out_of_range to "
                "'earliest' or 'latest' to continue without it")
        log.warning("%s: dropping it (kafka.offset_out_of_range=%s)", msg, policy)
        notes.append(f"partition {part} dropped")
    for part in sorted(watermarks):
        low, high = watermarks[part]
        if part not in start:
            resolved[part] = low
            continue
        offset = start[part]
        if low <= offset <= high:
            resolved[part] = offset
            continue
        message = _out_of_range_message(topic, part, offset, low, high)
        if policy == "fail":
            raise OffsetOutOfRangeError(message)
        resolved[part] = low if policy == "earliest" else high
        skipped = _skipped(offset, resolved[part])
        log.warning("%s — restarting at %d%s (kafka.offset_out_of_range=%s)",
                    message.split("; the broker")[0], resolved[part], skipped, policy)
        notes.append(f"partition {part} reset {offset} -> {resolved[part]} ({policy}{skipped})")
    return resolved, notes


def _skipped(offset: int, restart: int) -> str:
    """``, N offsets skipped`` when a reset moves forward (nothing when it moves back)."""
    return f", {restart - offset} offsets skipped" if restart > offset else ""


def fair_caps(available: Mapping[int, int], max_records: int) -> dict[int, int]:
    """Split ``max_records`` over partitions by water-filling.

    Partitions with little data take all of it; the rest share what is left equally
    (remainders go to the partitions with most data, then the higher partition number).
    The result never exceeds ``available`` nor ``max_records`` in total.
    """
    if max_records < 0:
        raise SourceError(f"max_records must be >= 0, got {max_records}")
    order = sorted(available, key=lambda p: (available[p], p))
    remaining = max_records
    caps: dict[int, int] = {}
    for index, part in enumerate(order):
        share = remaining // (len(order) - index)
        caps[part] = min(max(available[part], 0), share)
        remaining -= caps[part]
    return {p: caps[p] for p in sorted(caps)}


@dataclass(frozen=True)
class OffsetPlan:
    """A planned ``[start, end)`` per partition plus what happened while planning."""

    start: dict[int, int]
    end: dict[int, int]
    watermarks: dict[int, tuple[int, int]]
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Number of offsets in the plan (messages, compaction gaps aside)."""
        return sum(self.end[p] - self.start[p] for p in self.end)

    def info(self, topic: str) -> dict[str, Any]:
        """JSON-friendly facts for :attr:`BatchRange.info`."""
        return {
            "topic": topic,
            "partitions": {
                str(p): {"start": self.start[p], "end": self.end[p],
                         "low": self.watermarks[p][0], "high": self.watermarks[p][1],
                         "lag_after": self.watermarks[p][1] - self.end[p]}
                for p in sorted(self.end) if p in self.watermarks
            },
            "notes": list(self.notes),
        }


def plan_offsets(
    topic: str, start: Mapping[int, int], watermarks: Watermarks, max_records: int,
    policy: Policy = "fail",
) -> OffsetPlan:
    """The next batch from ``start``: at most ``max_records`` offsets, spread fairly."""
    resolved, notes = resolve_start(topic, start, watermarks, policy)
    available = {p: watermarks[p][1] - resolved[p] for p in resolved}
    caps = fair_caps(available, max_records)
    end = {p: resolved[p] + caps[p] for p in resolved}
    new = sorted(set(watermarks) - set(start))
    if new and start:
        notes.append(f"new partitions {new} start at their low watermark")
    return OffsetPlan(resolved, end, dict(watermarks), notes)


def plan_exact(
    topic: str, start: Mapping[int, int], end: Mapping[int, int], watermarks: Watermarks,
    policy: Policy = "fail",
) -> OffsetPlan:
    """Exactly ``[start, end)`` (finishing a half-committed batch), checked against the broker.

    Partitions in ``end`` but not in ``start`` start at their low watermark. A head of the
    range deleted by retention fails under policy ``fail`` and is skipped otherwise; a
    range reaching past the high watermark always fails (those rows cannot be re-read).
    """
    resolved: dict[int, int] = {}
    notes: list[str] = []
    for part in sorted(end):
        stop = end[part]
        low, high = watermarks.get(part, (stop, stop))
        begin = start.get(part, low)
        if begin > stop:
            raise SourceError(
                f"topic {topic!r} partition {part}: range start {begin} is after end {stop}; "
                "a batch end must not be behind its start")
        if begin < stop and (part not in watermarks or stop > high or begin < low):
            begin = _clamp_exact(topic, part, (begin, stop), watermarks, policy)
            notes.append(f"partition {part} range start {start.get(part)} -> {begin} "
                         f"(deleted by retention{_skipped(start.get(part, begin), begin)})")
        resolved[part] = begin
    return OffsetPlan(resolved, dict(end), dict(watermarks), notes)


def _clamp_exact(
    topic: str, part: int, rng: tuple[int, int], watermarks: Watermarks, policy: Policy
) -> int:
    begin, stop = rng
    if part not in watermarks:
        raise OffsetOutOfRangeError(
            f"topic {topic!r} partition {part}: cannot re-read offsets [{begin}, {stop}), "
            "the partition no longer exists; the topic was recreated — restore its data or "
            "reset the flow")
    low, high = watermarks[part]
    message = (f"topic {topic!r} partition {part}: cannot re-read offsets [{begin}, {stop}), "
               f"the broker has [{low}, {high})")
    if stop > high:
        raise OffsetOutOfRangeError(
            message + "; the topic lost data (recreated, or an in-memory broker restarted): "
            "restore the data or reset the flow")
    if policy == "fail":
        raise OffsetOutOfRangeError(
            message + ". Set kafka.offset_out_of_range to 'earliest' to skip the part "
            "deleted by retention, e.g. ICETIDE_KAFKA__OFFSET_OUT_OF_RANGE=earliest")
    log.warning("%s: reading [%d, %d) (kafka.offset_out_of_range=%s)",
                message, min(low, stop), stop, policy)
    return min(low, stop)


def compute_lag(topic: str, position: Mapping[int, int], watermarks: Watermarks) -> dict[str, Any]:
    """Messages between ``position`` and the high watermark, per partition and in total."""
    behind = {
        str(p): max(0, high - max(position.get(p, low), low))
        for p, (low, high) in sorted(watermarks.items())
    }
    return {"topic": topic, "partitions": behind, "total": sum(behind.values())}
