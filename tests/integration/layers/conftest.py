"""The ``lake`` fixture of the layer tests: a private catalog, topic and pipeline copy."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import KafkaConfig, Settings
from tests.integration.layers.layers_helpers import Lake, copy_pipeline, register_catalog


@pytest.fixture()
def lake(spark: SparkSession, icetide_settings: Settings, broker: str,
         kafka_topic: Callable[..., str], tmp_path: Path) -> Iterator[Lake]:
    cat = f"lay_{uuid.uuid4().hex[:6]}"
    register_catalog(spark, cat, tmp_path / "warehouse")
    topic = kafka_topic(partitions=2)
    pipeline = copy_pipeline(tmp_path, cat, topic)
    settings = icetide_settings.model_copy(update={"kafka": KafkaConfig(bootstrap=broker)})
    yield Lake(spark, settings, cat, pipeline, broker, topic)
