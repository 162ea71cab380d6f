"""What every source gives the generic flow loop.

A source turns a committed *position* (a JSON-serialisable value: Kafka offsets per
partition, a binlog file/pos, an upstream snapshot id) into the next *batch*: a
half-open range ``[start, end)`` that is deterministic — reading the same range twice
yields the same rows. The flow loop stores ``end`` in the target table's snapshot
summary in the same commit as the rows, so a crash simply replans from ``start``.

This module imports no pyspark at runtime; ``read`` receives the SparkSession.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Position = Any  # JSON-serialisable: dict/list/str/int


@dataclass(frozen=True)
class BatchRange:
    """One planned batch of a source: rows in ``[start, end)`` and how many there are."""

    start: Position
    end: Position
    records: int
    # Free-form facts for metrics/status (e.g. per-partition lag); not part of identity.
    info: dict[str, Any] = field(default_factory=dict)


class Source(ABC):
    """A replayable source of a flow."""

    #: Stable identity of this source inside a flow's position map, e.g. ``kafka:clicktopic``.
    key: str

    @abstractmethod
    def initial_position(self) -> Position:
        """Where a flow starts when its target has never committed (e.g. earliest offsets)."""

    @abstractmethod
    def plan(self, start: Position, max_records: int | None = None) -> BatchRange | None:
        """Plan the next batch from ``start``; ``None`` when nothing new is available.

        ``end`` must be a position that ``plan``/``read`` accept as a later ``start``.
        Raises :class:`icetide.errors.SourceError` subclasses for unrecoverable states
        (offsets out of range under policy ``fail``, purged binlog...).
        """

    @abstractmethod
    def plan_to(self, start: Position, end: Position) -> BatchRange:
        """Re-plan exactly ``[start, end)`` (used to finish a half-committed batch)."""

    @abstractmethod
    def read(self, spark: SparkSession, batch: BatchRange) -> DataFrame:
        """The rows of ``batch`` as a DataFrame (deterministic for the same range)."""

    def lag(self, position: Position) -> dict[str, Any]:
        """How far ``position`` is behind the source head (for ``icetide status``)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook, most sources hold nothing
        """Release clients held by the driver."""
