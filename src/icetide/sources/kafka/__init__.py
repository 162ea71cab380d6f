"""Kafka source: driver-side offset planning, Spark tasks reading with confluent-kafka.

``KafkaSource`` is the :class:`icetide.model.source.Source` of a topic. Inside a flow,
``kafka.read(name, schema=..., dead_letter=...)`` returns this batch's decoded rows: it
goes through the declarative core's source-read hook (:func:`icetide.pipelines.reader.read_source`),
which the engine installs while flows run. JSON decoding into typed columns and dead
letters lives in :mod:`icetide.sources.kafka.decode` (it imports pyspark, so it is not
imported here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.pipelines.reader import read_source
from icetide.sources.kafka.client import resolve_bootstrap
from icetide.sources.kafka.source import KafkaSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["KafkaSource", "read", "resolve_bootstrap"]


def read(source: str, *, schema: StructType | str, dead_letter: str,
         required: Sequence[str] = ()) -> DataFrame:
    """Valid rows of Kafka source ``source`` in this batch, JSON decoded with ``schema``
    (a StructType or DDL string), plus ``_kafka_*`` provenance columns; ``required``
    fields must be present and non-null; everything else lands in ``dead_letter``."""
    return read_source(source, format="json", schema=schema, dead_letter=dead_letter,
                       required=tuple(required))
