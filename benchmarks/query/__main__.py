"""``python -m benchmarks.query``: the seed's ad-hoc queries on Spark, DuckDB and Trino.

Builds ``ods_behavior.clickevent`` with ``--rows`` synthetic rows of the ODS schema in a
fresh home whose catalog is the default one (icetide's metastore service), then runs the
seed's two queries — ``select * from ods_behavior.clickevent limit 100`` and ``SELECT
productId, name, product_price, count(*) … GROUP BY productId, name, product_price`` —
on each engine through ``Context.sql`` (tables by name through the catalog, as ``icetide
sql --engine spark|duckdb|trino`` does; Trino is the local one of ``icetide trino start``,
476 on Java 25, read through the same metastore):

* cold: ``--cold`` times per engine, the engine is started afresh (a new SparkSession, a
  new DuckDB instance, a restarted Trino server) and each query runs once; the start
  itself is reported apart;
* warm: after one warm-up run, ``--runs`` timed runs of each query.

Prints p50/p95 per engine and query and appends them to docs/benchmarks.md. Run it alone
on a quiet machine (1-minute load below 1.5); Trino's restarts make it take minutes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.report import append_section
from icetide.app.context import Context, Engine
from icetide.config import Settings, SparkConfig, load_settings
from icetide.query import duckdb_path
from icetide.runtime.metastore.service import stop_metastore
from icetide.runtime.session import stop_spark
from icetide.runtime.trino.server import ensure_trino, stop_trino

QUERIES = {
    "limit 100": "select * from ods_behavior.clickevent limit 100",
    "GROUP BY": ("SELECT productId, name, product_price, count(*) AS views "
                 "FROM ods_behavior.clickevent GROUP BY productId, name, product_price"),
}
ENGINES: tuple[Engine, ...] = ("spark", "duckdb", "trino")
LABELS = {"spark": "Spark (`icetide sql`)", "duckdb": "DuckDB (`--engine duckdb`)",
          "trino": "Trino 476 (`--engine trino`)"}
TABLE_DDL = (
    "CREATE TABLE ods_behavior.clickevent (webpageId INT, uid STRING, productId STRING, "
    "cookieId STRING, expendTime INT, updateTime BIGINT, name STRING, "
    "product_price DECIMAL(10,2), eventTime TIMESTAMP, dt STRING) USING iceberg "
    "PARTITIONED BY (days(eventTime))")


@dataclass
class Timings:
    """Seconds per (engine, query) cold and warm, and each engine's start."""

    cold: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    warm: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    start: dict[str, list[float]] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.query", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000, help="rows in the ODS table")
    p.add_argument("--runs", type=int, default=20, help="warm timed runs per engine and query")
    p.add_argument("--cold", type=int, default=3, help="cold starts per engine")
    p.add_argument("--no-doc", action="store_true", help="do not append to docs/benchmarks.md")
    return p.parse_args(argv)


def _fill(ctx: Context, rows: int) -> None:
    spark = ctx.spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ods_behavior")
    spark.sql(TABLE_DDL)
    spark.range(rows, numPartitions=4).selectExpr(
        "CAST(id % 500 AS INT) AS webpageId", "CONCAT('u', id % 50000) AS uid",
        "CAST(id % 9 + 1 AS STRING) AS productId", "CONCAT('c', id % 7919) AS cookieId",
        "CAST(id % 60 AS INT) AS expendTime", "1763856000000 + id * 37 AS updateTime",
        "CONCAT('product-', id % 9 + 1) AS name",
        "CAST((id % 9 + 1) * 10.5 AS DECIMAL(10,2)) AS product_price",
        "timestamp_millis(1763856000000 + id * 37) AS eventTime",
        "date_format(timestamp_millis(1763856000000 + id * 37), 'yyyyMMdd') AS dt",
    ).writeTo("ods_behavior.clickevent").append()


def _fresh(settings: Settings, engine: Engine) -> Context:
    """A context whose ``engine`` starts afresh on its next query (Trino: restarted now)."""
    if engine == "spark":
        stop_spark()
    elif engine == "duckdb":
        duckdb_path._loaded = None  # the process-wide instance: the next query makes one
    else:
        stop_trino(settings)
        ensure_trino(settings, install=False)
    return Context(settings)


def _cold(settings: Settings, engine: Engine, timings: Timings) -> None:
    began = time.perf_counter()
    ctx = _fresh(settings, engine)
    if engine == "spark":
        _ = ctx.spark  # the session's start is the engine's start, not the query's
    timings.start.setdefault(engine, []).append(time.perf_counter() - began)
    for name, query in QUERIES.items():
        began = time.perf_counter()
        ctx.sql(query, engine=engine)
        timings.cold.setdefault((engine, name), []).append(time.perf_counter() - began)


def _warm(ctx: Context, engine: Engine, runs: int, timings: Timings) -> None:
    for name, query in QUERIES.items():
        rows = len(ctx.sql(query, engine=engine, limit=None).rows)  # warm-up
        if name == "GROUP BY":
            timings.groups[engine] = rows
        for _ in range(runs):
            began = time.perf_counter()
            ctx.sql(query, engine=engine, limit=None)
            timings.warm.setdefault((engine, name), []).append(time.perf_counter() - began)


def _measure(settings: Settings, args: argparse.Namespace) -> Timings:
    timings = Timings()
    for engine in ENGINES:
        for _ in range(args.cold):
            _cold(settings, engine, timings)
        if engine == "trino":
            ensure_trino(settings, install=False)  # running already unless --cold 0
        _warm(Context(settings), engine, args.runs, timings)
    return timings


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-query-") as tmp:
        env = {**os.environ, "ICETIDE_HOME": str(Path(tmp) / "home")}
        settings = load_settings(None, environ=env).model_copy(
            update={"spark": SparkConfig(driver_memory="4g")})
        try:
            began = time.perf_counter()
            _fill(Context(settings), args.rows)
            print(f"{args.rows:,} rows written in {time.perf_counter() - began:.1f}s")
            timings = _measure(settings, args)
        finally:
            stop_trino(settings)
            stop_spark()
            stop_metastore(settings)
    assert len(set(timings.groups.values())) == 1, timings.groups
    _report(args, timings)


def _ms(seconds: list[float]) -> str:
    if not seconds:
        return "- | -"
    p50, p95 = np.percentile(seconds, 50), np.percentile(seconds, 95)
    return f"{p50 * 1000:.0f} ms | {p95 * 1000:.0f} ms"


def _headline(t: Timings) -> str:
    """Warm GROUP BY p50 per engine, and each against Spark's."""
    p50 = {e: float(np.percentile(t.warm[e, "GROUP BY"], 50)) for e in ENGINES
           if t.warm.get((e, "GROUP BY"))}
    base = p50.get("spark")
    return "warm GROUP BY p50: " + ", ".join(
        f"{e} {v * 1000:.0f} ms" + (f" ({v / base:.2f}× Spark)" if base and e != "spark" else "")
        for e, v in p50.items())


def _report(args: argparse.Namespace, t: Timings) -> None:
    rows = "".join(
        f"| {LABELS[e]} | {q} | {_ms(t.cold.get((e, q), []))} | {_ms(t.warm[e, q])} |\n"
        for e in ENGINES for q in QUERIES)
    starts = ", ".join(f"{e} {np.median(t.start[e]):.1f} s" for e in ENGINES if e in t.start)
    body = (
        f"`python -m benchmarks.query --rows {args.rows} --runs {args.runs} --cold "
        f"{args.cold}`: the seed's queries over `ods_behavior.clickevent` ({args.rows:,} "
        f"rows, {t.groups['spark']} groups), tables by name through the catalog service. "
        f"Cold: the engine started afresh before each of {args.cold} runs; warm: after one "
        f"warm-up, {args.runs} runs.\n\n"
        "| engine | query | cold p50 | cold p95 | warm p50 | warm p95 |\n"
        f"|---|---|---|---|---|---|\n{rows}\n"
        f"Engine start (median, not in the cold times): {starts}.\n")
    print(body)
    if not args.no_doc:
        title = "Ad-hoc query by name (benchmarks/query)"
        print(f"written to {append_section(title, body, headline=_headline(t))}")


if __name__ == "__main__":
    main()
