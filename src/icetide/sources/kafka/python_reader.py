"""Reading planned Kafka offset ranges in Python tasks (``kafka.reader=python``): the
confluent-kafka :class:`~icetide.sources.kafka.reader.SliceReader` in ``mapInArrow``,
decoding the JSON values in the task (:mod:`.arrow_decode`) where the schema allows it.

Removing the Python reader is removing this module, :mod:`.reader`, :mod:`.task_decode`,
:mod:`.arrow_decode` and :mod:`.struct_decode` (with their tests, and the ``python``
branch of :func:`~icetide.sources.kafka.source.batch_reader`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from icetide.sources.kafka.layout import DEFAULT_SLICE_SIZE
from icetide.sources.kafka.reader import SliceReader, read_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class PythonReader:
    """A :class:`~icetide.sources.kafka.layout.BatchReader` on :class:`SliceReader` tasks."""

    #: The tasks' function is a :class:`SliceReader`.
    worker_modules: ClassVar[tuple[str, ...]] = (SliceReader.__module__,)

    tasks: SliceReader
    slice_size: int = DEFAULT_SLICE_SIZE

    def raw(self, spark: SparkSession, topic: str, start: Mapping[int, int],
            end: Mapping[int, int]) -> DataFrame:
        return read_batch(spark, topic, start, end, self.tasks, self.slice_size)

    def decoded(self, spark: SparkSession, topic: str, start: Mapping[int, int],
                end: Mapping[int, int], schema: StructType,
                required: Sequence[str]) -> DataFrame:
        """Decoded in the reader tasks; Spark parses only the records they defer."""
        from icetide.sources.kafka import task_decode
        from icetide.sources.kafka.decode import decode_json

        decoder = task_decode.python_decoder(schema, required)
        if decoder is None:
            return decode_json(self.raw(spark, topic, start, end), schema, required)
        reader = dataclasses.replace(self.tasks, decoder=decoder)
        frame = read_batch(spark, topic, start, end, reader, self.slice_size,
                           task_decode.reader_schema(schema))
        return task_decode.finish_decoded(frame, schema, required)
