"""Interpreting sources' lag answers (pure)."""

from __future__ import annotations

from icetide.app.lag import SourceLag, from_source_lag


def test_kafka_answers_are_messages_behind() -> None:
    lag = from_source_lag("kafka:clicks", {"topic": "clicks", "partitions": {"0": 3, "1": 4},
                                           "total": 7})
    assert (lag.behind, lag.unit) == (7.0, "messages")
    assert lag.short() == "kafka:clicks: 7 messages"


def test_binlog_style_answers_are_seconds_behind() -> None:
    lag = from_source_lag("mysql:shop", {"seconds_behind": 2.5, "file": "binlog.000003"})
    assert (lag.behind, lag.unit) == (2.5, "seconds")
    assert from_source_lag("x:y", {}).unit == "unknown"


def test_an_unreachable_source_shows_its_lag_as_unknown_with_the_reason() -> None:
    lag = SourceLag("kafka:clicks", None, "", error="Kafka at 127.0.0.1:9 unreachable")
    assert lag.short() == "kafka:clicks: unknown (Kafka at 127.0.0.1:9 unreachable)"
