"""The embedded Apache Kafka (KRaft): lifecycle, data kept across restarts, errors."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from tests.conftest import create_topic

from icetide.devkit.embedded.kafka import EmbeddedKafka
from icetide.devkit.embedded.process import port_in_use
from icetide.errors import RuntimeSetupError
from icetide.runtime.retry import wait_until

pytestmark = pytest.mark.kafka


def _marks_once(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "marks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


def marks(bootstrap: str, topic: str) -> tuple[int, int]:
    """The partition's watermarks once it has a leader again: after an unclean kill the
    restarted broker recovers its log and re-elects first, and a client meanwhile gets
    NOT_LEADER_FOR_PARTITION (a transient error every Kafka client retries)."""
    return wait_until(lambda: _marks_once(bootstrap, topic), timeout=60.0,
                      what=f"a leader for {topic}-0", interval=0.5, ignoring=KafkaException)


def test_data_survives_a_stop_and_a_kill(tmp_path: Path) -> None:
    kafka = EmbeddedKafka(None, tmp_path)
    with kafka:
        assert kafka.running and port_in_use(kafka.port)
        assert port_in_use(kafka.controller_port)
        create_topic(kafka.bootstrap, "kept", 1)
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        for i in range(50):
            producer.produce("kept", f"m{i}".encode(), partition=0)
        assert producer.flush(10) == 0
        cluster = (tmp_path / "logs" / "meta.properties").read_text()
    assert not kafka.running and not port_in_use(kafka.port)
    kafka.start()  # same data dir: not formatted again, same cluster, same records
    try:
        assert (tmp_path / "logs" / "meta.properties").read_text() == cluster
        assert marks(kafka.bootstrap, "kept") == (0, 50)
        kafka.kill()
        assert not kafka.running
        kafka.start()
        assert marks(kafka.bootstrap, "kept") == (0, 50)
    finally:
        kafka.stop()


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(RuntimeSetupError, match=f"port {port} .* already in use"):
            EmbeddedKafka(port, tmp_path).start()
