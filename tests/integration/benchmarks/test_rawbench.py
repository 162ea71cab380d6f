"""Benchmark (a) helper on a tiny topic: counts must reconcile with the generator."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from benchmarks.ingest.rawbench import raw_consume, raw_consume_rate

from icetide.devkit.gen.clicks import GenOptions, produce_clicks

pytestmark = pytest.mark.kafka


def test_raw_consume_counts(broker: str, kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(3)
    report = produce_clicks(broker, topic, GenOptions(count=2400, bad_ratio=0.05, seed=2))
    result = raw_consume(broker, topic)
    assert result.messages == 2400
    assert result.decoded == 2400 - report.kinds["truncated_json"]  # the others are JSON
    assert result.rate > 0 and raw_consume_rate(broker, topic) > 0
