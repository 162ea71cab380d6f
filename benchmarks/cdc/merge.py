"""The MERGE part of ``python -m benchmarks.cdc``: a fixed change batch into big targets.

Each target size is built once; the batch is merged twice from the same table snapshot
(rolled back in between): once as before (no key predicate: Spark shuffles and sorts every
target row for the right outer join) and once with the batch's keys in ``ON``
(:mod:`icetide.lake.key_filter`, what ``MergeSink`` does now).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

NS = "lake.bench_merge"


def make_table(spark: Any, ident: str, rows: int) -> int:
    """A CDC-shaped target of ``rows`` rows; returns its snapshot id."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    spark.sql(f"DROP TABLE IF EXISTS {ident}")
    spark.sql(f"CREATE TABLE {ident} (id BIGINT NOT NULL, name STRING, qty INT, "
              "price DECIMAL(10,4), _cdc_pos DECIMAL(38,0), _ts TIMESTAMP) USING iceberg "
              "PARTITIONED BY (bucket(16, id)) TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
              "'write.merge.mode'='merge-on-read')")
    spark.sql(f"ALTER TABLE {ident} SET IDENTIFIER FIELDS id")
    spark.range(rows).selectExpr(
        "id", "concat('item', id) AS name", "CAST(id % 17 AS INT) AS qty",
        "CAST(id / 7 AS DECIMAL(10,4)) AS price", "CAST(1 AS DECIMAL(38,0)) AS _cdc_pos",
        "current_timestamp() AS _ts").writeTo(ident).append()
    return int(spark.sql(f"SELECT snapshot_id FROM {ident}.snapshots").collect()[0][0])


def changes(spark: Any, rows: int, count: int) -> Any:
    """A fixed batch: 60 % updates, 20 % deletes (spread over the table), 20 % inserts."""
    step = max(rows // count, 1)
    return spark.range(count).selectExpr(
        f"CASE WHEN id < {count * 4 // 5} THEN id * {step} ELSE {rows} + id END AS id",
        "'changed' AS name", "CAST(1 AS INT) AS qty", "CAST(1.5 AS DECIMAL(10,4)) AS price",
        "CAST(2 AS DECIMAL(38,0)) AS _cdc_pos", "current_timestamp() AS _ts",
        f"CASE WHEN id < {count * 3 // 5} THEN '+U' WHEN id < {count * 4 // 5} THEN '-D' "
        "ELSE '+I' END AS _op")


def _no_key_filter(batch: Any, *args: Any, **kwargs: Any) -> Any:
    """The key probe without its predicate: the batch is counted, the MERGE reads it all."""
    from icetide.lake.key_filter import KeyProbe

    return KeyProbe(batch.count(), None)


@contextmanager
def _key_filter(enabled: bool) -> Iterator[None]:
    from icetide.lake import sinks

    original = sinks.probe_keys  # type: ignore[attr-defined]
    if not enabled:
        sinks.probe_keys = _no_key_filter  # type: ignore[attr-defined]
    try:
        yield
    finally:
        sinks.probe_keys = original  # type: ignore[attr-defined]


def _check(spark: Any, ident: str, rows: int, count: int) -> None:
    got = spark.sql(f"SELECT count(*), count_if(name = 'changed') FROM {ident}").first()
    updates, deletes = count * 3 // 5, count * 4 // 5 - count * 3 // 5
    inserts = count - count * 4 // 5
    want = (rows - deletes + inserts, updates + inserts)
    if tuple(got) != want:
        raise SystemExit(f"MERGE into {ident}: (rows, changed) = {tuple(got)}, expected {want}")


def merge_seconds(spark: Any, ident: str, rows: int, count: int, *, filtered: bool) -> float:
    """Seconds of one MergeSink write of the fixed batch (checked afterwards)."""
    from icetide.lake.sinks import MergeSink
    from icetide.model.markers import Marker
    from icetide.tables.merge_engines import deduplicate

    batch = changes(spark, rows, count).persist()
    batch.count()
    sink = MergeSink(deduplicate("_cdc_pos", on_delete="remove"), ("id",), op_column="_op")
    props = Marker("bench", {"s": {"n": 0}}, {"s": {"n": 1}}, rows=count).to_summary()
    with _key_filter(filtered):
        began = time.perf_counter()
        sink.write(spark, batch, ident, props, frozenset())
        took = time.perf_counter() - began
    batch.unpersist()
    _check(spark, ident, rows, count)
    return took


def measure(spark: Any, sizes: list[int], count: int) -> dict[str, float]:
    """``merge_plain_<size>`` and ``merge_<size>`` (key filter) seconds per target size."""
    out: dict[str, float] = {}
    warm = f"{NS}.warmup"
    for filtered in (False, True):  # JIT and caches warm for both variants alike
        make_table(spark, warm, count * 2)
        merge_seconds(spark, warm, count * 2, count, filtered=filtered)
    spark.sql(f"DROP TABLE {warm}")
    for size in sizes:
        ident = f"{NS}.t{size}"
        first = make_table(spark, ident, size)
        out[f"merge_plain_{size}"] = merge_seconds(spark, ident, size, count, filtered=False)
        spark.sql(f"CALL lake.system.rollback_to_snapshot('{ident[5:]}', {first})")
        out[f"merge_{size}"] = merge_seconds(spark, ident, size, count, filtered=True)
        spark.sql(f"DROP TABLE {ident}")
    return out
