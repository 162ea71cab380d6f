"""Shared Kafka client settings and the retry loop of the driver-side planner."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from icetide.errors import SourceUnavailableError
from icetide.runtime.retry import Failure, backoff, patience, retrying

if TYPE_CHECKING:
    from icetide.config import KafkaConfig

log = logging.getLogger(__name__)

T = TypeVar("T")
LOOPBACK = "127.0.0.1"
# The consumer group id the planner and readers present. Nothing is ever committed
# under it: positions live in the target table's snapshot summaries.
READER_GROUP = "icetide-reader"


# Bulk-read consumer settings (tasks and the raw benchmark). librdkafka stops fetching
# for fetch.queue.backoff.ms (default 1000) whenever its local queue is over the
# thresholds: with the default, one process read ~190k msg/s from Tansu; with 10 ms,
# ~540k msg/s (measured here, 2 cores).
BULK_READ: dict[str, Any] = {
    "fetch.queue.backoff.ms": 10,
    "fetch.message.max.bytes": 10 * 1024 * 1024,
    "fetch.wait.max.ms": 100,
    "queued.max.messages.kbytes": 128 * 1024,
}


def resolve_bootstrap(kafka: KafkaConfig, override: str | None = None) -> str:
    """``override``, else ``kafka.bootstrap``, else the embedded ``127.0.0.1:<embedded_port>``."""
    return override or kafka.bootstrap or f"{LOOPBACK}:{kafka.embedded_port}"


def consumer_config(
    bootstrap: str, properties: Mapping[str, str] | None = None, **overrides: Any
) -> dict[str, Any]:
    """A consumer config that never commits offsets and never resets them silently."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": READER_GROUP,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "allow.auto.create.topics": False,
        "log_level": 3,
    }
    conf.update(properties or {})
    conf.update(overrides)
    return conf


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: ``initial``, doubling up to ``max_backoff`` per wait.

    ``patience`` bounds the total time spent retrying (``None``: retry for ever — the
    planner never gives up and never skips data while the broker is away).
    """

    initial: float = 0.2
    max_backoff: float = 30.0
    patience: float | None = None


def patience_text(patience: float | None) -> str:
    """How long a retry loop with ``patience`` keeps trying, for its first warning."""
    if patience is None:
        return "retrying with backoff until it answers (Ctrl-C to stop)"
    return (f"retrying with backoff for up to {patience:g}s before reporting it unavailable "
            "(kafka.retry_timeout, ICETIDE_KAFKA__RETRY_TIMEOUT)")


def with_retry(fn: Callable[[], T], what: str, bootstrap: str, policy: RetryPolicy) -> T:
    """Call ``fn``; on ``KafkaException`` wait with exponential backoff and call it again.

    Every retry is logged at WARNING. When ``policy.patience`` runs out a
    :class:`SourceError` names the bootstrap servers and how long it tried.
    """
    from confluent_kafka import KafkaException

    def give_up(failure: Failure) -> SourceUnavailableError:
        return SourceUnavailableError(
            f"Kafka at {bootstrap} unreachable while trying to {what}: {failure.error} "
            f"({failure.attempts} attempts over {failure.waited:.1f}s). Check that the broker "
            "runs (`icetide broker start` for the embedded one) and kafka.bootstrap; "
            "kafka.retry_timeout (ICETIDE_KAFKA__RETRY_TIMEOUT) sets how long to wait")

    def on_retry(failure: Failure, wait: float) -> None:
        if failure.attempts == 1:  # up front: how long this will go on
            log.warning("Kafka at %s: %s failed (%s); %s", bootstrap, what, failure.error,
                        patience_text(policy.patience))
            return
        log.warning("Kafka at %s: %s failed (%s); retry %d in %.1fs (%.0fs so far)", bootstrap,
                    what, failure.error, failure.attempts, wait, failure.waited)

    retry = retrying(KafkaException, wait=backoff(policy.initial, policy.max_backoff),
                     stop=patience(policy.patience), give_up=give_up, on_retry=on_retry)
    return retry(fn)
