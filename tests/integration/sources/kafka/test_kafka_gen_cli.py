"""``icetide gen clicks`` through click's CliRunner against the embedded broker."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from kafka_test_helpers import offsets

from icetide.cli.gen_cmd import gen
from icetide.config import KafkaConfig
from icetide.sources.kafka import KafkaSource

pytestmark = pytest.mark.kafka

SENT = re.compile(
    r"sent (\d+) events to (\S+) on (\S+) \((\d+) valid, (\d+) malformed\) in ([\d.]+)s: "
    r"([\d,]+) events/s"
)


def run(args: list[str], tmp_path: Path) -> tuple[Result, re.Match[str]]:
    result = CliRunner().invoke(gen, ["clicks", "--config", str(tmp_path / "none.yaml"), *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    match = SENT.search(result.output)
    assert match, result.output
    return result, match


def on_broker(broker: str, topic: str) -> int:
    src = KafkaSource(topic, KafkaConfig(bootstrap=broker))
    try:
        return int(src.lag({})["total"])
    finally:
        src.close()


@pytest.fixture
def no_config(tmp_path: Path) -> Path:
    (tmp_path / "none.yaml").write_text("{}\n")
    return tmp_path


def test_counts_and_topic_creation(broker: str, no_config: Path,
                                   kafka_topic: Callable[..., str]) -> None:
    topic = f"gen_{kafka_topic(1)}"  # a fresh name the command has to create
    _, m = run(["--bootstrap", broker, "--topic", topic, "-c", "5000", "--bad-ratio", "0.02",
                "--partitions", "2", "--seed", "3"], no_config)
    assert (int(m[1]), m[2], m[3], int(m[4]), int(m[5])) == (5000, topic, broker, 4900, 100)
    assert on_broker(broker, topic) == 5000
    src = KafkaSource(topic, KafkaConfig(bootstrap=broker))
    assert len(offsets(src.initial_position())) == 2
    src.close()


def test_rate_is_held(broker: str, no_config: Path, kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(3)
    began = time.monotonic()
    _, m = run(["--bootstrap", broker, "--topic", topic, "-c", "12000", "--rate", "6000"],
               no_config)
    elapsed = time.monotonic() - began
    rate = float(m[7].replace(",", ""))
    assert abs(rate - 6000) <= 0.05 * 6000, m[0]
    assert 1.9 <= elapsed <= 3.5
    assert on_broker(broker, topic) == 12000


def test_duration_and_seed_sleep(broker: str, no_config: Path,
                                 kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(3)
    _, m = run(["--bootstrap", broker, "--topic", topic, "-c", "0", "--duration", "1",
                "--rate", "3000"], no_config)
    assert abs(int(m[1]) - 3000) <= 150 and on_broker(broker, topic) == int(m[1])
    _, m = run(["--bootstrap", broker, "--topic", topic, "-c", "3000", "-s", "150"], no_config)
    assert float(m[6]) >= 0.45  # 3 slices of 1000 events, each followed by 150 ms of sleep


def test_default_bootstrap_is_the_embedded_port(broker: str, no_config: Path,
                                                 kafka_topic: Callable[..., str]) -> None:
    topic = kafka_topic(1)
    port = broker.rsplit(":", 1)[1]
    result = CliRunner().invoke(
        gen, ["clicks", "--topic", topic, "-c", "10", "--config", str(no_config / "none.yaml")],
        env={"ICETIDE_KAFKA__EMBEDDED_PORT": port, "ICETIDE_KAFKA__BOOTSTRAP": None})
    assert result.exit_code == 0, result.output
    assert f"on 127.0.0.1:{port}" in result.output
