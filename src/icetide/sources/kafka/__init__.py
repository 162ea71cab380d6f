"""Kafka source: driver-side offset planning, Spark tasks reading with confluent-kafka.

``KafkaSource`` is the :class:`icetide.model.source.Source` of a topic. Inside a flow,
``kafka.read(name, schema=..., dead_letter=...)`` returns this batch's decoded rows
(:func:`icetide.engine.reads.read_json`). JSON decoding into typed columns and dead
letters lives in :mod:`icetide.sources.kafka.decode` (it imports pyspark, so it is not
imported here).
"""

from icetide.engine.reads import read_json as read
from icetide.sources.kafka.client import resolve_bootstrap
from icetide.sources.kafka.source import KafkaSource

__all__ = ["KafkaSource", "read", "resolve_bootstrap"]
