"""What every Kafka batch reader shares: the raw row shape, how many tasks read a batch,
and the :class:`BatchReader` protocol the source calls (``jvm``: :mod:`.jvm_reader`,
``python``: :mod:`.python_reader`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: The raw messages of a batch, whichever reader read them.
RAW_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp"
)
#: The most offsets one Spark task reads.
DEFAULT_SLICE_SIZE = 250_000

Ranges = Mapping[int, tuple[int, int]]  # partition → [start, end)


def ranges(start: Mapping[int, int], end: Mapping[int, int]) -> dict[int, tuple[int, int]]:
    """The non-empty ``[start, end)`` per partition (a partition missing from ``start``
    starts at its ``end``: nothing to read)."""
    out = {p: (start.get(p, end[p]), end[p]) for p in sorted(end)}
    return {p: r for p, r in out.items() if r[0] < r[1]}


def task_count(sizes: Sequence[int], slots: int, slice_size: int = DEFAULT_SLICE_SIZE) -> int:
    """Spark tasks for partition ranges of ``sizes`` offsets: one per task slot (fewer if
    there are fewer slices of at most ``slice_size``), more when a task would read over
    ``slice_size`` offsets. Each task writes its own data file per batch, so short ranges
    share a task instead of one task (and file) per Kafka partition."""
    slices = sum(-(-size // slice_size) for size in sizes if size > 0)
    if not slices:
        return 0
    return min(slices, max(1, slots, -(-sum(sizes) // max(1, slice_size))))


class BatchReader(Protocol):
    """Reads a planned batch ``[start, end)`` of one topic."""

    #: The modules its Spark tasks import in Python workers.
    worker_modules: ClassVar[tuple[str, ...]]

    def raw(self, spark: SparkSession, topic: str, start: Mapping[int, int],
            end: Mapping[int, int]) -> DataFrame:
        """The messages (:data:`RAW_SCHEMA_DDL`)."""
        ...

    def decoded(self, spark: SparkSession, topic: str, start: Mapping[int, int],
                end: Mapping[int, int], schema: StructType,
                required: Sequence[str]) -> DataFrame:
        """The messages decoded as :func:`~icetide.sources.kafka.decode.decode_json` does."""
        ...
