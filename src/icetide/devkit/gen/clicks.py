"""Click events of the seed's ``DataGen2``, produced to Kafka fast.

Every event is a JSON object with the seed's fields (keys in fastjson's sorted order)::

    {"cookieId": 15 random ASCII letters, "expendTime": int 0-19, "productId": "0".."19",
     "uid": one of 513248/10952/555655/795098/603670, "updateTime": epoch ms,
     "webpageId": int 10-99}

``uid`` follows the seed's ``USERINFR_MAP.getOrDefault(RandomUtils.nextInt(1, 6), "10001")``:
``nextInt``'s upper bound is exclusive (as in ``nextInt(10, 100)`` → 10..99), so the key is
1..5, always in the map, and the default ``"10001"`` never occurs. ``updateTime`` is the
wall clock when the event's batch is generated. ``products`` and ``hot_share`` widen the
product ids (a large dimension's keys) and put a share of the clicks on one of them (a
hot key). With ``bad_ratio`` that exact fraction
of events is malformed, rotating through :data:`MALFORMED_KINDS`;
:attr:`ClickGenerator.counts` records how many of each kind were made so tests can
reconcile what a pipeline accepted and rejected.

Speed: events are generated in batches (random bytes translated to letters and digits,
one ``orjson.dumps`` per batch, split into messages) and produced without per-message
callbacks (librdkafka reports failed deliveries only).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message, Producer

from icetide.errors import SourceError
from icetide.runtime.interrupt import pause

log = logging.getLogger(__name__)

UIDS = ("513248", "10952", "555655", "795098", "603670")  # USERINFR_MAP[nextInt(1, 6)]
PRODUCT_IDS = tuple(str(i) for i in range(20))
CLICK_SCHEMA_DDL = (
    "cookieId string, expendTime int, productId string, uid string, updateTime bigint, "
    "webpageId int"
)
CLICK_REQUIRED = ("uid", "productId", "updateTime")
MALFORMED_KINDS = (
    "truncated_json", "wrong_type_expendTime", "wrong_type_updateTime",
    "missing_uid", "missing_productId", "missing_updateTime",
)
VALID = "valid"
_LETTERS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_TO_LETTER = bytes(_LETTERS[i % 52] for i in range(256))
_NOT_LETTER = bytes(range(208, 256))  # 208 = 4 * 52: dropping the rest keeps it unbiased


class ClickGenerator:
    """Makes batches of encoded click events; ``seed`` makes them reproducible."""

    def __init__(self, bad_ratio: float = 0.0, seed: int | None = None, *,
                 products: int = len(PRODUCT_IDS), hot_share: float = 0.0) -> None:
        if not 0.0 <= bad_ratio <= 1.0:
            raise SourceError(f"bad ratio {bad_ratio} must be within 0..1, e.g. 0.01 for 1 %")
        if products < 1 or not 0.0 <= hot_share <= 1.0:
            raise SourceError(f"products={products}, hot_share={hot_share}: products must be "
                              ">= 1 and hot_share within 0..1 (e.g. 0.3: 30 % on product '0')")
        self.bad_ratio = bad_ratio
        self.products = products
        self.hot_share = hot_share
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self.total = 0
        self._next_kind = 0

    def _uniform(self, n: int, span: int) -> bytes:
        """``n`` random bytes ``b`` with ``b % span`` uniform in ``0..span-1``."""
        drop = bytes(range(256 - 256 % span, 256))
        out = b""
        while len(out) < n:
            missing = n - len(out)
            out += self.rng.randbytes(missing + missing // 4 + 16).translate(None, drop)
        return out[:n]

    def _cookies(self, n: int) -> list[str]:
        raw = b""
        while len(raw) < 15 * n:
            missing = 15 * n - len(raw)
            raw += self.rng.randbytes(missing + missing // 4 + 16).translate(
                _TO_LETTER, _NOT_LETTER)
        text = raw[: 15 * n].decode("ascii")
        return [text[i : i + 15] for i in range(0, 15 * n, 15)]

    def events(self, n: int, now_ms: int | None = None) -> list[dict[str, object]]:
        """``n`` valid events as dicts."""
        ts = int(time.time() * 1000) if now_ms is None else now_ms
        spend, page = self._uniform(n, 20), self._uniform(n, 90)
        user, product = self._uniform(n, len(UIDS)), self._product_ids(n)
        return [
            {"cookieId": c, "expendTime": spend[i] % 20, "productId": product[i],
             "uid": UIDS[user[i] % len(UIDS)], "updateTime": ts, "webpageId": 10 + page[i] % 90}
            for i, c in enumerate(self._cookies(n))
        ]

    def _product_ids(self, n: int) -> list[str]:
        """``n`` product ids: ``hot_share`` of them ``"0"``, the rest uniform in
        ``"0".."products-1"`` (the seed's 20 by default)."""
        if self.products == len(PRODUCT_IDS) and not self.hot_share:
            return [PRODUCT_IDS[b % 20] for b in self._uniform(n, 20)]
        rng, hot, space = self.rng, self.hot_share, self.products
        return ["0" if hot and rng.random() < hot else str(rng.randrange(space))
                for _ in range(n)]

    def batch(self, n: int, now_ms: int | None = None) -> list[bytes]:
        """``n`` encoded events; the configured fraction of them malformed."""
        if n <= 0:
            return []
        events = self.events(n, now_ms)
        # Values hold only letters and digits, so "},{" separates the objects.
        body = orjson.dumps(events)[2:-2]
        encoded = [b"{" + part + b"}" for part in body.split(b"},{")]
        bad = int((self.total + n) * self.bad_ratio) - int(self.total * self.bad_ratio)
        for index in sorted(self.rng.sample(range(n), bad)) if bad else ():
            encoded[index] = self._malformed(events[index])
        self.total += n
        self.counts[VALID] += n - bad
        return encoded

    def _malformed(self, event: dict[str, object]) -> bytes:
        kind = MALFORMED_KINDS[self._next_kind % len(MALFORMED_KINDS)]
        self._next_kind += 1
        self.counts[kind] += 1
        if kind == "truncated_json":
            text = orjson.dumps(event)
            return text[: len(text) // 2]
        if kind == "wrong_type_expendTime":
            event["expendTime"] = "abc"
        elif kind == "wrong_type_updateTime":
            event["updateTime"] = "yesterday"
        else:
            del event[kind.removeprefix("missing_")]
        return orjson.dumps(event)

    @property
    def malformed(self) -> int:
        """Malformed events made so far."""
        return self.total - self.counts[VALID]


@dataclass(frozen=True)
class GenReport:
    """What one generator run sent."""

    valid: int
    malformed: int
    seconds: float
    rate: float
    topic: str = ""
    kinds: dict[str, int] = field(default_factory=dict)
    delivery_errors: int = 0

    @property
    def total(self) -> int:
        """Events handed to the producer (valid + malformed)."""
        return self.valid + self.malformed


class Pacer:
    """Holds an average rate: sleeps until ``sent / rate`` seconds after the start."""

    def __init__(self, rate: float | None) -> None:
        if rate is not None and rate <= 0:
            raise SourceError(f"rate {rate} must be > 0 events/s (omit it for full speed)")
        self.rate = rate
        self.began = time.monotonic()

    def slice_size(self, default: int) -> int:
        """Events per slice: ~10 ms worth at the target rate, at most ``default``."""
        return default if self.rate is None else max(1, min(default, int(self.rate / 100)))

    def wait(self, sent: int, stop: threading.Event | None = None) -> None:
        """Block until ``sent`` events are due (no-op without a rate) or ``stop`` is set;
        a stop request raises :class:`~icetide.runtime.interrupt.Interrupted`."""
        if self.rate is None:
            return
        delay = self.began + sent / self.rate - time.monotonic()
        if delay > 0:
            pause(delay, stop)


def producer_config(
    bootstrap: str, properties: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Throughput-oriented producer settings (the seed's acks=all, 1 MiB batches).

    ``linger.ms`` 50: a paced generator (``rate``) otherwise sends a record batch every
    few milliseconds per partition. The embedded broker (Tansu, ``memory://``) keeps
    every batch and its offset look-ups and fetches slow down with their number
    (docs/operations.md); fewer, larger batches keep them fast. It adds at most 50 ms to
    an event's freshness."""
    conf: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 50,
        "batch.size": 1024 * 1024,
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1024 * 1024,
        "delivery.report.only.error": True,
        "enable.idempotence": False,
        "client.id": "icetide-gen",
        "logger": logging.getLogger("icetide.devkit.gen.librdkafka"),
    }
    conf.update(properties or {})
    return conf


def ensure_topic(
    bootstrap: str, topic: str, partitions: int = 3, properties: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> int:
    """Create ``topic`` with ``partitions`` partitions unless it exists; returns its count."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic  # what confluent_kafka.admin re-exports

    # Quiet: an unreachable broker becomes one SourceError below, not a stream of log lines.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **(properties or {})})
    try:
        meta = admin.list_topics(timeout=timeout)
        existing = meta.topics.get(topic)
        if existing is not None and existing.error is None:
            if len(existing.partitions) != partitions:
                log.info("topic %r exists with %d partitions (asked for %d): keeping it",
                         topic, len(existing.partitions), partitions)
            return len(existing.partitions)
        future = admin.create_topics([NewTopic(topic, partitions, 1)])[topic]
        try:
            future.result(timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        log.info("created topic %r with %d partitions", topic, partitions)
        return partitions
    except KafkaException as exc:
        raise SourceError(
            f"cannot create or inspect topic {topic!r} on Kafka at {bootstrap}: {exc}. Start "
            "the embedded broker (`icetide broker start`) or pass --bootstrap HOST:PORT"
        ) from exc


@dataclass
class GenOptions:
    """How :func:`produce_clicks` paces and stops."""

    count: int = 1_000_000  # 0: no limit (until duration or stop)
    rate: float | None = None  # events/s; None: as fast as possible
    sleep_ms: float = 0.0  # the seed's -s: sleep after every 1000 events
    duration: float | None = None  # seconds
    bad_ratio: float = 0.0
    partitions: int = 3
    seed: int | None = None
    chunk: int = 5000
    products: int = len(PRODUCT_IDS)  # productIds "0".."products-1"
    hot_share: float = 0.0  # the share of clicks on product "0" (a hot key)


def _send(producer: Producer, topic: str, values: list[bytes]) -> None:
    produce = producer.produce
    for value in values:
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # local queue full: wait for the broker, never drop
                producer.poll(0.1)


def produce_clicks(
    bootstrap: str, topic: str = "clicktopic", options: GenOptions | None = None, *,
    properties: Mapping[str, str] | None = None, progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> GenReport:
    """Produce click events to ``topic`` (created if missing) and report what was sent."""
    from confluent_kafka import Producer

    opts = options or GenOptions()
    if opts.count < 0:
        raise SourceError(f"count {opts.count} must be >= 0 (0 means no limit)")
    ensure_topic(bootstrap, topic, opts.partitions, properties)
    gen = ClickGenerator(opts.bad_ratio, opts.seed, products=opts.products,
                         hot_share=opts.hot_share)
    errors: list[int] = [0]

    def on_error(err: KafkaError, _msg: Message) -> None:
        if err is not None:
            errors[0] += 1

    producer = Producer({**producer_config(bootstrap, properties), "on_delivery": on_error})
    began = time.monotonic()
    _run(producer, topic, gen, opts, progress, stop)
    left = producer.flush(30)
    seconds = max(time.monotonic() - began, 1e-9)
    if left:
        log.error("%d events still queued after 30s: counting them as delivery errors", left)
    sent = gen.total
    return GenReport(gen.counts[VALID], gen.malformed, seconds, sent / seconds, topic,
                     dict(gen.counts), errors[0] + left)


def _run(
    producer: Producer, topic: str, gen: ClickGenerator, opts: GenOptions,
    progress: Callable[[int], None] | None, stop: threading.Event | None,
) -> None:
    pacer = Pacer(opts.rate)
    chunk = 1000 if opts.sleep_ms > 0 else pacer.slice_size(opts.chunk)
    deadline = None if opts.duration is None else time.monotonic() + opts.duration
    while opts.count == 0 or gen.total < opts.count:
        if (stop is not None and stop.is_set()) or (
                deadline is not None and time.monotonic() >= deadline):
            break
        n = chunk if opts.count == 0 else min(chunk, opts.count - gen.total)
        _send(producer, topic, gen.batch(n))
        producer.poll(0)
        if opts.sleep_ms > 0:
            pause(opts.sleep_ms / 1000, stop)
        pacer.wait(gen.total, stop)
        if progress is not None:
            progress(gen.total)
