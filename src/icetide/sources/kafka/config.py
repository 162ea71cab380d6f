"""``{type: kafka, topic: clicktopic}``: a Kafka topic (bootstrap: settings.kafka, else the
embedded broker)."""

from __future__ import annotations

from icetide.config import Settings
from icetide.sources.kafka.source import KafkaSource
from icetide.sources.registry import SourceConfig


class Config(SourceConfig):
    topic: str
    bootstrap: str | None = None


def build(name: str, config: Config, settings: Settings) -> KafkaSource:
    return KafkaSource(config.topic, settings.kafka, bootstrap=config.bootstrap,
                       retry_patience=settings.kafka.retry_timeout)
