"""An unreachable broker: the first warning says how long icetide will keep trying."""

from __future__ import annotations

import logging

import pytest

from icetide.config import KafkaConfig
from icetide.devkit.embedded.process import free_port
from icetide.errors import SourceUnavailableError
from icetide.sources.kafka.source import KafkaSource


def test_the_first_retry_warning_says_how_long_it_keeps_trying(
        caplog: pytest.LogCaptureFixture) -> None:
    bootstrap = f"127.0.0.1:{free_port()}"  # nothing listens there
    source = KafkaSource("clicks", KafkaConfig(bootstrap=bootstrap, retry_backoff_max=0.5),
                         retry_patience=1.5, request_timeout=0.5)
    try:
        with caplog.at_level(logging.WARNING, logger="icetide.sources.kafka"), \
                pytest.raises(SourceUnavailableError, match="unreachable"):
            source.initial_position()
    finally:
        source.close()
    first = caplog.records[0].getMessage()
    assert first.startswith(f"Kafka at {bootstrap}: ")
    assert first.endswith("retrying with backoff for up to 1.5s before reporting it unavailable "
                          "(kafka.retry_timeout, ICETIDE_KAFKA__RETRY_TIMEOUT)")
