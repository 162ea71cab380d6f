"""Kafka source: driver-side offset planning, Spark tasks reading with confluent-kafka.

``KafkaSource`` is the :class:`icetide.model.source.Source` of a topic. Inside a flow,
``kafka.read(name, schema=..., dead_letter=...)`` returns this batch's decoded rows: it
goes through the declarative core's source-read hook (:func:`icetide.pipelines.reader.read_source`),
which the engine installs while flows run. JSON decoding into typed columns and dead
letters lives in :mod:`icetide.sources.kafka.decode` (it imports pyspark, so it is not
imported here).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from icetide.sources.kafka.client import resolve_bootstrap
    from icetide.sources.kafka.source import KafkaSource

__all__ = ["KafkaSource", "read", "resolve_bootstrap"]

#: Imported on first use: a Spark task that reads a slice imports this package on its way
#: to :mod:`icetide.sources.kafka.reader`, and must not pay for the driver side (the
#: pipeline API, its config models and SQL parser: most of a worker's import time).
_LAZY = {"KafkaSource": "icetide.sources.kafka.source",
         "resolve_bootstrap": "icetide.sources.kafka.client"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read(source: str, *, schema: StructType | str, dead_letter: str,
         required: Sequence[str] = ()) -> DataFrame:
    """Valid rows of Kafka source ``source`` in this batch, JSON decoded with ``schema``
    (a StructType or DDL string), plus ``_kafka_*`` provenance columns; ``required``
    fields must be present and non-null; everything else lands in ``dead_letter``."""
    from icetide.pipelines.reader import read_source

    return read_source(source, format="json", schema=schema, dead_letter=dead_letter,
                       required=tuple(required))
