"""``python -m benchmarks.ingest.batch``: where one big ingest micro-batch spends its time.

Produces ``--events`` click events (1 % malformed) to a fresh embedded broker, warms the
clickstream ODS flow up, then times one batch of all of them: the Kafka read alone, read
+ decode, and the flow's phases (transform + checks, dead letters, target commit).
Prints the phases; writes nothing.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from benchmarks.ingest.__main__ import TOPIC, _flow
from icetide.config import Settings
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.gen.clicks import CLICK_REQUIRED, CLICK_SCHEMA_DDL, GenOptions, produce_clicks
from icetide.flows.loop import BatchResult, Flow, FlowLoop
from icetide.model.positions import KafkaPosition
from icetide.runtime.metastore.service import stop_metastore
from icetide.sources.kafka.decode import decode_json
from icetide.sources.kafka.source import KafkaSource

log = logging.getLogger(__name__)
SPENT: dict[str, float] = defaultdict(float)


@contextmanager
def _timed(label: str) -> Iterator[None]:
    began = time.perf_counter()
    try:
        yield
    finally:
        SPENT[label] += time.perf_counter() - began


def _wrap(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        with _timed(label):
            return inner(*args, **kwargs)

    setattr(owner, name, timed)


def _read_phases(spark: Any, src: KafkaSource, loop: FlowLoop) -> None:
    from pyspark.sql.types import StructType, _parse_datatype_string

    start = cast(KafkaPosition, loop.committed_start()[src.key])
    batch = src.plan(start)
    assert batch is not None
    with _timed("read only (count)"):
        src.read(spark, batch).count()
    schema = _parse_datatype_string(CLICK_SCHEMA_DDL)
    assert isinstance(schema, StructType)
    for _ in range(2):  # alternate: the machine's load drifts
        with _timed("read + decode (count)"):
            src.read_json(spark, batch, schema, CLICK_REQUIRED).count()
        with _timed("read + from_json decode (count)"):
            decode_json(src.read(spark, batch), schema, CLICK_REQUIRED).count()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ingest.batch", description=__doc__)
    p.add_argument("--events", type=int, default=400_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--compare-cache", action="store_true",
                   help="first a batch that also caches the flow output, then the normal one")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="icetide-batch-") as tmp, \
            EmbeddedBroker(None, Path(tmp) / "broker") as broker:
        bs = broker.bootstrap
        produce_clicks(bs, TOPIC, GenOptions(count=20_000, partitions=a.partitions, seed=1))
        spark, flow = _flow(Path(tmp) / "home", bs, a.events)
        try:
            result = _profile(spark, flow, bs, a)
        finally:  # the home's catalog service, started by Spark
            stop_metastore(Settings(home=Path(tmp) / "home"))
    for label, seconds in SPENT.items():
        print(f"{label:32s} {seconds:6.2f} s  {a.events / seconds:>10,.0f} ev/s")
    print(f"rows {result.rows:,}, dead letters {result.dlq_rows:,}")


def _profile(spark: Any, flow: Flow, bs: str, a: argparse.Namespace) -> BatchResult:
    """Warm up, then time one batch of ``a.events`` (phases into :data:`SPENT`)."""
    FlowLoop(spark, flow).run_until_caught_up()  # warm-up
    if a.compare_cache:
        produce_clicks(bs, TOPIC, GenOptions(count=a.events, bad_ratio=0.01, seed=3))
        old = FlowLoop(spark, flow)
        old._reuse_inputs = lambda ctx: False  # type: ignore[method-assign]
        with _timed("batch, output cached too"):
            old.run_batch()
    produce_clicks(bs, TOPIC, GenOptions(count=a.events, bad_ratio=0.01, seed=2))
    loop = FlowLoop(spark, flow)
    (src,) = flow.sources.values()
    assert isinstance(src, KafkaSource)
    _read_phases(spark, src, loop)
    _wrap(loop, "_check", "rows + stats (transform runs)")
    _wrap(loop, "_write_sides", "dead letters: count + commit")
    _wrap(flow.sink, "write", "target commit")
    with _timed("whole batch"):
        result = loop.run_batch()
    assert result is not None
    return result


if __name__ == "__main__":
    main()
