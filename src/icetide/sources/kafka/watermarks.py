"""A topic's partitions and their (low, high) watermarks, asked the way the broker answers best.

Two methods; :class:`WatermarkClient` picks one per broker on first use and keeps it:

* ``fetch`` — a fresh consumer fetches every partition at an offset far past its end. Tansu
  (the embedded broker) answers with no records and the true log start and high watermark,
  read from one small per-partition record. Its ``ListOffsets`` instead lists every record
  batch the partition holds (about 2.5 µs each, and librdkafka sends two per partition), and
  ``ListOffsets(latest)`` reports the last batch's base offset + 1, hiding the log's tail.
  With 30,000 batches held, that made each look-up ~60 ms of broker CPU and grew all run.
* ``list`` — Kafka proper answers a fetch past the end with ``OFFSET_OUT_OF_RANGE``; the
  client then uses ``ListOffsets`` for good, followed by one short fetch at the listed high
  watermark (which raises it where a broker under-reports it, as Tansu does).

Every call retries with exponential backoff while the broker is away (never skipping data).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from icetide.errors import SourceError, listed
from icetide.sources.kafka.client import RetryPolicy, consumer_config, with_retry

log = logging.getLogger(__name__)

Method = Literal["auto", "fetch", "list"]
_OFFSET_INVALID = -1001  # librdkafka: watermark not known yet
_FAR = 2**62  # an offset past the end of any log
_PROBE: dict[str, Any] = {"fetch.wait.max.ms": 10, "queued.min.messages": 1,
                          "fetch.message.max.bytes": 65536, "log_level": 0}


def known(low: int, high: int) -> bool:
    """Whether librdkafka's cached watermarks are real: they read -1001 while unknown and
    -1 until the first fetch response carries them (Apache Kafka, under load: a restarted
    pipeline once committed the position ``-1`` from them)."""
    return _OFFSET_INVALID not in (low, high) and min(low, high) >= 0


class WatermarkClient:
    """Lists a topic's partitions and their watermarks, retrying while the broker is away.

    ``method`` is ``auto`` (find out on first use), ``fetch`` or ``list`` (module docs).
    """

    def __init__(
        self, topic: str, bootstrap: str, properties: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None, request_timeout: float = 10.0,
        *, method: Method = "auto",
    ) -> None:
        self.topic = topic
        self.bootstrap = bootstrap
        self.properties = dict(properties or {})
        self.retry = retry or RetryPolicy()
        self.request_timeout = request_timeout
        self.method: Method = method
        self._consumer: Any = None
        self.cluster_id: str | None = None  # learnt with the partitions

    def _client(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(consumer_config(self.bootstrap, self.properties,
                                                      log_level=0))
        return self._consumer

    def watermarks(self, retry: RetryPolicy | None = None) -> dict[int, tuple[int, int]]:
        """``{partition: (low, high)}`` for every partition of the topic."""
        return with_retry(self._fetch, f"read watermarks of topic {self.topic!r}",
                          self.bootstrap, retry or self.retry)

    def _partitions(self) -> list[int]:
        from confluent_kafka import KafkaError, KafkaException

        meta = self._client().list_topics(self.topic, timeout=self.request_timeout)
        self.cluster_id = meta.cluster_id
        topic_meta = meta.topics.get(self.topic)
        error = None if topic_meta is None else topic_meta.error
        if topic_meta is None or (error is not None
                                  and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise SourceError(
                f"topic {self.topic!r} does not exist on {self.bootstrap}: create it "
                "(`icetide gen clicks --topic NAME` creates it) or fix the topic name")
        if error is not None:
            raise KafkaException(error)
        for part in topic_meta.partitions.values():
            if part.error is not None:
                raise KafkaException(part.error)
        return sorted(topic_meta.partitions)

    def _fetch(self) -> dict[int, tuple[int, int]]:
        from confluent_kafka import KafkaException

        try:
            parts = self._partitions()
            if self.method != "list":
                marks = self._tail(parts)
                if marks is not None:
                    return marks
            return self._fetched_highs(self._listed(parts))
        except KafkaException:
            self.close()  # the next attempt connects afresh instead of waiting on backoff
            raise

    def _decide(self, method: Method, why: str) -> None:
        if self.method == "auto":
            log.info("Kafka at %s: watermarks of topic %r by %s (%s)", self.bootstrap,
                     self.topic, "a fetch past the end" if method == "fetch" else "ListOffsets",
                     why)
        self.method = method

    def _tail(self, parts: list[int]) -> dict[int, tuple[int, int]] | None:
        """Watermarks from a fetch past the end; ``None`` when the broker refuses it."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        refused = {KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET}
        marks: dict[int, tuple[int, int]] = {}
        with self._probe({p: _FAR for p in parts}) as probe:
            deadline = time.monotonic() + self.request_timeout
            while len(marks) < len(parts) and time.monotonic() < deadline:
                for msg in probe.consume(1000, 0.02):
                    error = msg.error()
                    if error is not None and error.code() in refused:
                        self._decide("list", f"a fetch past the end is refused: {error.str()}")
                        return None
                    if error is not None:
                        raise KafkaException(error)
                for part in set(parts) - set(marks):
                    low, high = probe.get_watermark_offsets(TopicPartition(self.topic, part),
                                                            cached=True)
                    if known(low, high):
                        marks[part] = (low, high)
        return self._tail_result(parts, marks)

    def _tail_result(
        self, parts: list[int], marks: dict[int, tuple[int, int]]
    ) -> dict[int, tuple[int, int]] | None:
        from confluent_kafka import KafkaError, KafkaException

        if len(marks) == len(parts):
            self._decide("fetch", "the broker answers it with the watermarks")
            return marks
        missing = sorted(set(parts) - set(marks))
        if self.method == "auto":
            self._decide("list", "no watermarks in the fetch answer for partitions "
                         f"{listed(missing)}")
            return None
        raise KafkaException(KafkaError(
            KafkaError._TIMED_OUT, f"no fetch answer for partitions {listed(missing)} of topic "
            f"{self.topic!r} within {self.request_timeout:.0f}s"))

    def _listed(self, parts: list[int]) -> dict[int, tuple[int, int]]:
        from confluent_kafka import TopicPartition

        client = self._client()
        marks: dict[int, tuple[int, int]] = {}
        for part in parts:
            low, high = client.get_watermark_offsets(
                TopicPartition(self.topic, part), timeout=self.request_timeout, cached=False)
            marks[part] = (low, high)
        return marks

    def _fetched_highs(self, marks: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
        """Raise each listed high watermark to the one a Fetch at it reports.

        A broker may answer ``ListOffsets(latest)`` with the last batch's base offset + 1
        (Tansu does); a Fetch there returns the true high watermark (librdkafka caches
        it). With Kafka proper both agree, at the cost of one short fetch per plan.
        """
        from confluent_kafka import TopicPartition

        with self._probe({p: h for p, (_, h) in marks.items()}) as probe:
            pending = set(marks)
            deadline = time.monotonic() + min(self.request_timeout, 2.0)
            while pending and time.monotonic() < deadline:
                probe.consume(1000, 0.02)
                for part in list(pending):
                    _, high = probe.get_watermark_offsets(TopicPartition(self.topic, part),
                                                          cached=True)
                    if high != _OFFSET_INVALID:
                        pending.discard(part)
                        low, listed = marks[part]
                        marks[part] = (low, max(listed, high))
            if pending:
                log.debug("topic %r: no fetch answer for partitions %s; using ListOffsets",
                          self.topic, sorted(pending))
        return marks

    @contextmanager
    def _probe(self, offsets: Mapping[int, int]) -> Iterator[Any]:
        """A fresh consumer fetching each partition at ``offsets[partition]``.

        Fresh, because cached watermarks of an older assignment would be stale."""
        from confluent_kafka import Consumer, TopicPartition

        probe = Consumer(consumer_config(self.bootstrap, self.properties, **_PROBE))
        try:
            probe.assign([TopicPartition(self.topic, p, o) for p, o in offsets.items()])
            yield probe
        finally:
            probe.close()

    def close(self) -> None:
        """Close the consumer (reopened on next use)."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
