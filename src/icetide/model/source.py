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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from icetide.model.positions import Position

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["AnyBatch", "AnySource", "BatchRange", "P", "Position", "Source"]

#: The position type of one source (see :mod:`icetide.model.positions`).
P = TypeVar("P", bound=Mapping[str, object])


@dataclass(frozen=True)
class BatchRange(Generic[P]):
    """One planned batch of a source: rows in ``[start, end)`` and how many there are."""

    start: P
    end: P
    records: int
    # Free-form facts for metrics/status (e.g. per-partition lag); not part of identity.
    info: dict[str, object] = field(default_factory=dict)


class Source(ABC, Generic[P]):
    """A replayable source of a flow; ``P`` is its position type."""

    #: Stable identity of this source inside a flow's position map, e.g. ``kafka:clicktopic``.
    key: str

    @abstractmethod
    def initial_position(self) -> P:
        """Where a flow starts when its target has never committed (e.g. earliest offsets)."""

    @abstractmethod
    def plan(self, start: P, max_records: int | None = None) -> BatchRange[P] | None:
        """Plan the next batch from ``start``; ``None`` when nothing new is available.

        ``end`` must be a position that ``plan``/``read`` accept as a later ``start``.
        Raises :class:`icetide.errors.SourceError` subclasses for unrecoverable states
        (offsets out of range under policy ``fail``, purged binlog...).
        """

    @abstractmethod
    def plan_to(self, start: P, end: P) -> BatchRange[P]:
        """Re-plan exactly ``[start, end)`` (used to finish a half-committed batch)."""

    @abstractmethod
    def read(self, spark: SparkSession, batch: BatchRange[P]) -> DataFrame:
        """The rows of ``batch`` as a DataFrame (deterministic for the same range)."""

    @property
    def worker_modules(self) -> tuple[str, ...]:
        """The modules this source's Spark tasks import in Python workers (none: its tasks
        run no icetide code there). A run imports them in its workers ahead of the first
        batch (:mod:`icetide.runtime.warmup`)."""
        return ()

    def removed(self, spark: SparkSession, batch: BatchRange[P]) -> DataFrame | None:
        """The rows ``batch`` removed from the source (a lake table's deletes and
        rewrites); ``None``: it removed none, ``read`` is the whole change."""
        return None

    def full(self, spark: SparkSession, batch: BatchRange[P]) -> DataFrame:
        """Everything the source holds at ``batch.end``: the input of a recomputation
        (of the groups a removal touched). Only lake tables can answer."""
        from icetide.errors import SourceError

        raise SourceError(f"source {self.key} cannot be read in full: only lake tables can "
                          "be recomputed from")

    def release(self, batch: BatchRange[P]) -> None:
        """Free what reading ``batch`` held (called once the batch is done)."""

    def newest_event_ms(self, position: P) -> int | None:
        """The newest event time the data up to ``position`` reflects, when the source
        knows it (upstream lake tables do); a flow without an event-time column of its own
        records this as its freshness."""
        return None

    def lake_inputs(self) -> tuple[str, ...]:
        """The lake tables this source reads (``catalog.db.table``): a commit to one of
        them may give it new data, so a scheduler can start its flow right after that
        commit instead of polling. External sources (Kafka, a binlog) have none."""
        return ()

    def lag(self, position: P) -> dict[str, object]:
        """How far ``position`` is behind the source head (for ``icetide status``)."""
        return {}

    def close(self) -> None:
        """Release clients held by the driver."""


#: A source of any position type, as the generic flow loop holds them: the loop passes
#: each source only positions that source produced (stored as JSON in its markers).
AnySource = Source[Any]
#: A batch of such a source.
AnyBatch = BatchRange[Any]
