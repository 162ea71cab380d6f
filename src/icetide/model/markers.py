"""Exactly-once markers carried in Iceberg snapshot summaries (pure, no JVM).

Every commit a flow makes — to its target and to its side tables (dead letters,
changelog) — carries the same marker::

    icetide.flow        flow name
    icetide.start       JSON {source_key: position} the batch started at
    icetide.pos         JSON {source_key: position} the batch ended at (next start)
    icetide.rows        rows written to this table by the batch (absent on a changelog
                        commit, which counts them as it writes: Iceberg's added-records)
    icetide.rows-in     rows read from the sources
    icetide.dlq-rows    rows sent to the dead-letter table
    icetide.max-event-time   newest event time reflected, epoch ms (freshness)
    icetide.batch-ms    wall time of the batch
    icetide.committed-at     epoch ms at commit time (driver clock)

Resuming reads the newest marker of the flow among the target's snapshot ancestors:
its ``pos`` is the next batch's ``start``. A side table whose newest marker has
``start`` equal to that ``pos`` holds a batch the target has not committed yet (the
process died between the two commits); the loop then re-plans exactly that range and
skips the side table, so nothing is written twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson

from icetide.model.keys import MarkerKeys
from icetide.model.positions import Position

K = MarkerKeys
_KNOWN = frozenset({K.FLOW, K.START, K.POS, K.ROWS, K.ROWS_IN, K.DLQ_ROWS, K.MAX_EVENT_TIME,
                    K.BATCH_MS, K.COMMITTED_AT})
#: Iceberg's own count of the rows a snapshot added: the rows of a marker without
#: ``icetide.rows`` (a changelog append).
ADDED_RECORDS = "added-records"
#: Read by ``icetide describe``'s readable summaries (app/describe.py);
#: prefer :class:`MarkerKeys`.
COMMITTED_AT, MAX_EVENT_TIME = K.COMMITTED_AT, K.MAX_EVENT_TIME


def dumps(value: object) -> str:
    """Canonical JSON (sorted keys) so equal positions compare equal as text."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True)
class Marker:
    """One flow commit's marker as stored in a snapshot summary."""

    flow: str
    start: Mapping[str, Position]
    end: Mapping[str, Position]
    rows: int = K.ROWS_DEFAULT
    rows_in: int = K.ROWS_IN_DEFAULT
    dlq_rows: int = K.DLQ_ROWS_DEFAULT
    max_event_time_ms: int | None = None
    batch_ms: int | None = None
    committed_at_ms: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    def to_summary(self) -> dict[str, str]:
        """The snapshot-summary properties of this marker (all values are strings)."""
        props = {
            K.FLOW: self.flow,
            K.START: dumps(self.start),
            K.POS: dumps(self.end),
            K.ROWS: str(self.rows),
            K.ROWS_IN: str(self.rows_in),
            K.DLQ_ROWS: str(self.dlq_rows),
        }
        if self.max_event_time_ms is not None:
            props[K.MAX_EVENT_TIME] = str(self.max_event_time_ms)
        if self.batch_ms is not None:
            props[K.BATCH_MS] = str(self.batch_ms)
        if self.committed_at_ms is not None:
            props[K.COMMITTED_AT] = str(self.committed_at_ms)
        props.update({K.PREFIX + k: v for k, v in self.extra.items()})
        return props

    @classmethod
    def from_summary(cls, summary: Mapping[str, str]) -> Marker | None:
        """Parse a snapshot summary; ``None`` when it carries no icetide marker."""
        flow = summary.get(K.FLOW)
        if flow is None or K.POS not in summary:
            return None
        extra = {
            k[len(K.PREFIX):]: v for k, v in summary.items()
            if k.startswith(K.PREFIX) and k not in _KNOWN
        }
        return cls(
            flow=flow,
            start=orjson.loads(summary.get(K.START, K.START_DEFAULT)),
            end=orjson.loads(summary[K.POS]),
            rows=int(summary.get(K.ROWS) or summary.get(ADDED_RECORDS) or K.ROWS_DEFAULT),
            rows_in=int(summary.get(K.ROWS_IN, K.ROWS_IN_DEFAULT)),
            dlq_rows=int(summary.get(K.DLQ_ROWS, K.DLQ_ROWS_DEFAULT)),
            max_event_time_ms=_opt_int(summary.get(K.MAX_EVENT_TIME)),
            batch_ms=_opt_int(summary.get(K.BATCH_MS)),
            committed_at_ms=_opt_int(summary.get(K.COMMITTED_AT)),
            extra=extra,
        )


def _opt_int(value: str | None) -> int | None:
    return None if value in (None, "") else int(value)


def same_position(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Positions are equal when their canonical JSON is equal."""
    return dumps(a) == dumps(b)
