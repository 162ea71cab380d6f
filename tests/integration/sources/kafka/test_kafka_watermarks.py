"""WatermarkClient against the real embedded broker (Tansu): both methods, same answer."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from kafka_test_helpers import capture, produce_exact
from tests.brokers import APACHE

from icetide.errors import SourceError
from icetide.sources.kafka.watermarks import WatermarkClient

pytestmark = pytest.mark.kafka


def test_auto_picks_the_fetch_past_the_end_on_tansu(
    broker: str, kafka_topic: Callable[..., str]
) -> None:
    topic = kafka_topic(partitions=3)
    produce_exact(broker, topic, {0: 250, 1: 7, 2: 0}, batch=10)
    client = WatermarkClient(topic, broker, request_timeout=5.0)
    with capture(["icetide.sources.kafka.watermarks"]) as records:
        marks = client.watermarks()
    assert marks == {0: (0, 250), 1: (0, 7), 2: (0, 0)}
    assert client.method == "fetch"
    assert any("a fetch past the end" in m for m in records.messages(logging.INFO))
    client.close()


def test_list_method_agrees_and_sees_the_tail(
    broker: str, kafka_topic: Callable[..., str]
) -> None:
    """Tansu's ListOffsets(latest) hides the last batch; the follow-up fetch restores it."""
    topic = kafka_topic(partitions=2)
    produce_exact(broker, topic, {0: 95, 1: 31}, batch=10)
    listed = WatermarkClient(topic, broker, request_timeout=5.0, method="list")
    fetched = WatermarkClient(topic, broker, request_timeout=5.0, method="fetch")
    assert listed.watermarks() == fetched.watermarks() == {0: (0, 95), 1: (0, 31)}
    assert listed.method == "list"
    produce_exact(broker, topic, {1: 4}, prefix="more", batch=10)
    assert listed.watermarks() == fetched.watermarks() == {0: (0, 95), 1: (0, 35)}
    listed.close()
    fetched.close()


def test_missing_topic_names_the_fix(broker: str) -> None:
    client = WatermarkClient("no-such-topic-wm", broker, request_timeout=5.0)
    with pytest.raises(SourceError, match=r"does not exist.*icetide gen clicks"):
        client.watermarks()


@APACHE
def test_a_new_clients_first_look_up_on_apache_kafka_gives_real_marks(
    broker: str, kafka_topic: Callable[..., str]
) -> None:
    """Apache Kafka: librdkafka's cached watermarks read -1 until the first fetch response
    carries them; a first look-up by a new client (a restarted pipeline) never returns
    them as marks (that made a committed position ``-1`` after a kill -9)."""
    topic = kafka_topic(partitions=4)
    produce_exact(broker, topic, {0: 30, 1: 20, 2: 10, 3: 0}, batch=10)
    for _ in range(5):
        client = WatermarkClient(topic, broker, request_timeout=5.0)
        try:
            assert client.watermarks() == {0: (0, 30), 1: (0, 20), 2: (0, 10), 3: (0, 0)}
        finally:
            client.close()
