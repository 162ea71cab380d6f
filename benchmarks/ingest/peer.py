"""(c) The peer: a pyiceberg-only Python ingester (no Spark) doing the same job.

One process consumes the topic with confluent-kafka (the bulk-read settings that the raw
benchmark and icetide's reader tasks use), decodes and validates with msgspec (the
decoder icetide's reader tasks use for ordinary records),
looks products up in a dict, builds Arrow columns and appends them to an Iceberg table
partitioned by day of event time through pyiceberg (SQLite catalog).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pyarrow as pa

from benchmarks.ingest.rawbench import from_offsets
from icetide.devkit.gen.seed_rows import PRODUCTS
from icetide.sources.kafka.client import BULK_READ, consumer_config
from icetide.sources.kafka.watermarks import WatermarkClient

ARROW_SCHEMA = pa.schema([
    ("webpageId", pa.int32()), ("uid", pa.string()), ("productId", pa.string()),
    ("cookieId", pa.string()), ("expendTime", pa.int32()), ("updateTime", pa.int64()),
    ("name", pa.string()), ("product_price", pa.decimal128(10, 4)),
    ("eventTime", pa.timestamp("us")), ("dt", pa.string()),
])
_PRODUCTS = {p[0]: (p[1], p[3]) for p in PRODUCTS}

Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


class Click(msgspec.Struct):
    """A valid click: the required fields present with their types (msgspec checks)."""

    uid: str
    productId: str
    updateTime: int
    expendTime: Int32
    webpageId: Int32
    cookieId: str | None = None


_DECODE = msgspec.json.Decoder(Click).decode


def _columns(events: list[Click]) -> pa.Table:
    ts = pa.array([e.updateTime * 1000 for e in events], pa.timestamp("us"))
    names, prices = [], []
    for e in events:
        name, price = _PRODUCTS.get(e.productId, (None, None))
        names.append(name)
        prices.append(Decimal(price) if price is not None else None)
    dt = pa.compute.strftime(ts, format="%Y%m%d")
    cols = {
        "webpageId": pa.array([e.webpageId for e in events], pa.int32()),
        "uid": [e.uid for e in events], "productId": [e.productId for e in events],
        "cookieId": [e.cookieId for e in events],
        "expendTime": pa.array([e.expendTime for e in events], pa.int32()),
        "updateTime": [e.updateTime for e in events], "name": names,
        "product_price": pa.array(prices, pa.decimal128(10, 4)), "eventTime": ts, "dt": dt,
    }
    return pa.table(cols, schema=ARROW_SCHEMA)


def _table(workdir: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import DayTransform

    workdir.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("peer", uri=f"sqlite:///{workdir}/catalog.db",
                         warehouse=f"file://{workdir}/warehouse")
    catalog.create_namespace_if_not_exists("ods")
    table = catalog.create_table("ods.clickevent", schema=ARROW_SCHEMA)
    with table.update_spec() as update:
        update.add_field("eventTime", DayTransform(), "eventTime_day")
    return table


def pyiceberg_ingest(bootstrap: str, topic: str, workdir: Path, chunk: int = 250_000,
                     since: Mapping[int, int] | None = None) -> float:
    """Consume the topic (from the offsets ``since``, per partition, where given) into a
    pyiceberg table; returns rows/s."""
    from confluent_kafka import Consumer, TopicPartition

    table = _table(workdir)
    marks = from_offsets(WatermarkClient(topic, bootstrap).watermarks(), since)
    total = sum(high - low for low, high in marks.values())
    consumer = Consumer(consumer_config(bootstrap, BULK_READ))  # as (a) and icetide's tasks
    began = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in marks.items()])
    seen, pending, written = 0, [], 0
    while seen < total:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is not None:
                continue
            seen += 1
            value = msg.value()
            if value is None:  # a tombstone: nothing to decode
                continue
            try:
                pending.append(_DECODE(value))
            except (msgspec.DecodeError, UnicodeDecodeError):  # malformed, missing, mistyped
                continue
        if len(pending) >= chunk or (seen >= total and pending):
            table.append(_columns(pending))
            written += len(pending)
            pending = []
    consumer.close()
    return written / (time.perf_counter() - began)
