"""``{type: debezium, topic, table, primary_key, columns}``: a Debezium change topic."""

from __future__ import annotations

from icetide.config import Settings
from icetide.sources.debezium.source import DebeziumConfig, DebeziumSource, columns_from
from icetide.sources.kafka.source import KafkaSource
from icetide.sources.registry import SourceConfig


class Config(SourceConfig):
    topic: str
    table: str
    primary_key: tuple[str, ...]
    #: name → Spark type, in column order; only needed for schema-less messages
    columns: dict[str, str] | None = None
    bootstrap: str | None = None


def build(name: str, config: Config, settings: Settings) -> DebeziumSource:
    debezium = DebeziumConfig(name, config.table, columns_from(name, config.columns),
                              config.primary_key)
    kafka = KafkaSource(config.topic, settings.kafka, bootstrap=config.bootstrap,
                       retry_patience=settings.kafka.retry_timeout)
    return DebeziumSource(debezium, kafka)
