"""``python -m benchmarks.query``: the seed's ad-hoc statistic, DuckDB by name vs Spark.

Builds ``ods_behavior.clickevent`` with ``--rows`` synthetic rows of the ODS schema in a
fresh home whose catalog is the default one (icetide's metastore service), then runs the
seed's query — ``SELECT productId, name, product_price, count(*) … GROUP BY productId,
name, product_price`` — ``--runs`` times on each engine through ``Context.sql`` (tables
resolved by name through the catalog, as ``icetide sql`` does), after one warm-up run
each. Prints p50/p95 per engine and the DuckDB/Spark ratio; appends them to
docs/benchmarks.md. Run it alone on a quiet machine (1-minute load below 1.5).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.report import append_section
from icetide.app.context import Context, Engine
from icetide.config import SparkConfig, load_settings
from icetide.runtime.metastore.service import stop_metastore

QUERY = ("SELECT productId, name, product_price, count(*) AS views "
         "FROM ods_behavior.clickevent GROUP BY productId, name, product_price")
TABLE_DDL = (
    "CREATE TABLE ods_behavior.clickevent (webpageId INT, uid STRING, productId STRING, "
    "cookieId STRING, expendTime INT, updateTime BIGINT, name STRING, "
    "product_price DECIMAL(10,2), eventTime TIMESTAMP, dt STRING) USING iceberg "
    "PARTITIONED BY (days(eventTime))")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.query", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000, help="rows in the ODS table")
    p.add_argument("--runs", type=int, default=20, help="timed runs per engine")
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


def _time(ctx: Context, engine: Engine, runs: int) -> tuple[list[float], int]:
    groups = len(ctx.sql(QUERY, engine=engine).rows)  # warm-up
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        ctx.sql(QUERY, engine=engine)
        seconds.append(time.perf_counter() - began)
    return seconds, groups


def _stats(seconds: list[float]) -> tuple[float, float]:
    return float(np.percentile(seconds, 50)), float(np.percentile(seconds, 95))


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-query-") as tmp:
        env = {**os.environ, "ICETIDE_HOME": str(Path(tmp) / "home")}
        settings = load_settings(None, environ=env).model_copy(
            update={"spark": SparkConfig(driver_memory="4g")})
        ctx = Context(settings)
        try:
            began = time.perf_counter()
            _fill(ctx, args.rows)
            print(f"{args.rows:,} rows written in {time.perf_counter() - began:.1f}s")
            spark_s, groups = _time(ctx, "spark", args.runs)
            duck_s, duck_groups = _time(ctx, "duckdb", args.runs)
        finally:
            stop_metastore(settings)
    assert groups == duck_groups, (groups, duck_groups)
    _report(args, spark_s, duck_s, groups)


def _report(args: argparse.Namespace, spark_s: list[float], duck_s: list[float],
            groups: int) -> None:
    sp50, sp95 = _stats(spark_s)
    dp50, dp95 = _stats(duck_s)
    body = (
        f"`python -m benchmarks.query --rows {args.rows} --runs {args.runs}`: the seed's "
        f"`GROUP BY productId, name, product_price` over `ods_behavior.clickevent` "
        f"({args.rows:,} rows, {groups} groups), tables by name through the catalog service, "
        "each engine warmed up once, then timed.\n\n"
        "| engine | p50 | p95 |\n|---|---|---|\n"
        f"| Spark (`icetide sql`) | {sp50 * 1000:.0f} ms | {sp95 * 1000:.0f} ms |\n"
        f"| DuckDB (`icetide sql --engine duckdb`) | {dp50 * 1000:.0f} ms | "
        f"{dp95 * 1000:.0f} ms |\n\n"
        f"DuckDB/Spark p95 ratio: **{dp95 / sp95:.2f}** (target ≤ 0.2).\n")
    print(body)
    if not args.no_doc:
        print(f"appended to {append_section('Ad-hoc query by name (benchmarks/query)', body)}")


if __name__ == "__main__":
    main()
