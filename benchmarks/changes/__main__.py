"""``python -m benchmarks.changes``: what an erase at ODS costs to propagate, against a
full recomputation of the layers below it.

An ODS table shaped like ``ods_behavior.clickevent`` (merge-on-read, by day) gets
``--rows`` clicks of ``--users`` users (one user ≈ 1 / users of the rows) over the seed's
products. The example's layers (``examples/clickstream/layers``: DWD, DWS, ADS) are
built from it by one ``--once`` run — the full recomputation of those layers — then one
user is erased at ODS with SQL and a second ``--once`` run propagates the erase. Both
runs are timed, with the CPU seconds of this process (driver, Spark JVM, Python
workers); the ratio is the propagation's cost against the full recomputation.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.report import append_section
from icetide.config import CatalogConfig, Settings, SparkConfig
from icetide.tables.ddl import APPEND_TABLE_PROPERTIES, create_table_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

ODS = "lake.ods_behavior.clickevent"
ODS_COLUMNS = [
    ("webpageId", "int"), ("uid", "string"), ("productId", "string"), ("cookieId", "string"),
    ("expendTime", "int"), ("updateTime", "bigint"), ("name", "string"),
    ("product_price", "decimal(10,4)"), ("eventTime", "timestamp"), ("dt", "string"),
    ("_kafka_topic", "string"), ("_kafka_partition", "int"), ("_kafka_offset", "bigint"),
    ("_kafka_ts", "timestamp"),
]


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.changes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000, help="ODS rows")
    p.add_argument("--users", type=int, default=100, help="distinct users (erase: 1 of them)")
    p.add_argument("--days", type=int, default=7, help="days the clicks span")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _load_ods(spark: SparkSession, a: argparse.Namespace) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ods_behavior")
    spark.sql(create_table_sql(ODS, ODS_COLUMNS, partition_sql=["days(`eventTime`)"],
                               properties=APPEND_TABLE_PROPERTIES))
    span_ms = a.days * 86_400_000
    spark.range(a.rows, numPartitions=8).selectExpr(
        "cast(pmod(hash(id, 2), 50) as int) webpageId",
        f"concat('u', cast(pmod(hash(id, 3), {a.users}) as string)) uid",
        "cast(1 + pmod(hash(id, 4), 9) as string) productId",
        "concat('c', cast(id as string)) cookieId",
        "cast(pmod(hash(id, 1), 300) as int) expendTime",
        f"1764150000000 + cast(id * {span_ms} / {a.rows} as bigint) updateTime",
        "'test' name", "cast(10.5 as decimal(10,4)) product_price",
        f"timestamp_millis(1764150000000 + cast(id * {span_ms} / {a.rows} as bigint)) eventTime",
        f"date_format(timestamp_millis(1764150000000 + cast(id * {span_ms} / {a.rows} as "
        "bigint)), 'yyyyMMdd') dt",
        "'clicktopic' _kafka_topic", "cast(id % 4 as int) _kafka_partition",
        "id _kafka_offset", "timestamp_millis(1764150000000) _kafka_ts",
    ).writeTo(ODS).append()


def _timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    """Wall and CPU seconds (this process and its children: JVM, Python workers) of
    ``fn``, and what it returned."""
    from benchmarks.cpu import cpu_seconds, descendants

    pids = descendants(os.getpid())
    cpu0 = sum(cpu_seconds(p) for p in pids)
    began = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - began
    return seconds, sum(cpu_seconds(p) for p in descendants(os.getpid())) - cpu0, result


def _per_flow(done: object) -> dict[str, float]:
    """Seconds per flow of a ``run_once`` result."""
    assert isinstance(done, dict)
    return {flow: sum(r.seconds for r in results) for flow, results in done.items()}


def _flow_table(full: dict[str, float], prop: dict[str, float]) -> str:
    rows = "".join(f"| {f} | {full.get(f, 0):.1f} | {prop.get(f, 0):.1f} | "
                   f"{prop.get(f, 0) / full[f] if full.get(f) else 0:.2f} |\n"
                   for f in sorted(set(full) | set(prop)))
    below = [f for f in full if not f.startswith("ads.")]
    ratio = sum(prop.get(f, 0) for f in below) / sum(full[f] for f in below)
    return ("| flow | full s | propagation s | ratio |\n| --- | ---: | ---: | ---: |\n" + rows
            + f"\nDWD and DWS flows alone (the issue's scope): {ratio:.2f}× "
            "(sum of their batch seconds).\n")


DWD = "lake.dwd.click_wide"


def _floors(spark: SparkSession, uid: str, before: int, after: int) -> dict[str, float]:
    """The reads the propagation of the erase cannot avoid, timed as bare Spark reads (no
    MERGE, no commit; before the propagation, so DWD still holds the user's rows): the
    erased rows at ODS, located by position between the snapshots ``before`` and
    ``after`` of the erase (what DWD's batch reads); the user's rows in DWD with their
    positions (what its retraction reads); the user's (product, user) pairs recomputed
    from DWD (``dws.product_user``'s ``min``, no row count to drop to zero). The user
    clicked in every data file, so each read opens every file."""
    from pyspark.sql import functions as F

    from icetide.lake.changes import range_changes

    def read(df: DataFrame) -> float:
        return _timed(lambda: df.write.format("noop").mode("overwrite").save())[0]

    changes = range_changes(spark, ODS, before, after)
    try:
        ods = read(changes.removed())
    finally:
        changes.close()
    user = spark.table(DWD).where(F.col("uid") == uid)
    return {"the erased rows at ODS, by position (DWD's batch)": ods,
            "the user's rows in DWD, with their positions (its retraction)":
            read(user.select("*", "_file", "_pos")),
            "the user's pairs recomputed from DWD (dws.product_user's min)":
            read(user.groupBy("productId", "uid").agg(F.min("eventTime")))}


def _snapshot(spark: SparkSession, ident: str) -> int:
    from icetide.lake.commit import load_table

    return int(load_table(spark, ident).currentSnapshot().snapshotId())


def _floor_table(least: dict[str, float], full_s: float) -> str:
    rows = "".join(f"| {what} | {s:.1f} | {s / full_s:.2f} |\n" for what, s in least.items())
    total = sum(least.values())
    return ("Reads the propagation cannot avoid, as bare Spark reads of the same data (no "
            "MERGE, no commit):\n\n| read | wall s | / full recomputation |\n"
            "| --- | ---: | ---: |\n" + rows + f"| **all three** | **{total:.1f}** | "
            f"**{total / full_s:.2f}** |\n")


def run(a: argparse.Namespace, home: Path) -> str:
    from icetide.devkit.gen.seed_dims import load_seed_dimensions
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline
    from icetide.runtime.session import get_spark, stop_spark

    settings = Settings(home=home, spark=SparkConfig(driver_memory="6g"),
                        catalog=CatalogConfig(name="lake", type="hadoop"))
    spark = get_spark(settings)
    load_seed_dimensions(spark, "lake")
    _load_ods(spark, a)
    graph = load_pipeline(Path(__file__).resolve().parents[2] / "examples" / "clickstream")
    layers = [f for f in graph.flows if "clickevent" not in f]

    def layers_once() -> object:
        return PipelineRun(spark, settings, graph, only=layers).run_once()

    full = _timed(layers_once)
    top = spark.sql(f"SELECT uid, count(*) FROM {ODS} GROUP BY uid ORDER BY 2 DESC LIMIT 1"
                    ).collect()[0]
    before = _snapshot(spark, ODS)
    erase = _timed(lambda: spark.sql(f"DELETE FROM {ODS} WHERE uid = '{top[0]}'"))
    least = _floors(spark, str(top[0]), before, _snapshot(spark, ODS))
    prop = _timed(layers_once)
    stop_spark()
    return (f"Command: `python -m benchmarks.changes --rows {a.rows} --users {a.users} "
            f"--days {a.days}`\n\n"
            "| step | wall s | CPU s |\n| --- | ---: | ---: |\n"
            f"| full recomputation of DWD, DWS, ADS ({a.rows:,} ODS rows) | {full[0]:.1f} | "
            f"{full[1]:.1f} |\n"
            f"| the erase at ODS (`DELETE`, {top[1]:,} rows, "
            f"{top[1] / a.rows:.1%}) | {erase[0]:.1f} | {erase[1]:.1f} |\n"
            f"| its propagation through DWD, DWS, ADS (one `--once` run) | {prop[0]:.1f} | "
            f"{prop[1]:.1f} |\n\n"
            + _flow_table(_per_flow(full[2]), _per_flow(prop[2])) + "\n"
            + _floor_table(least, full[0]) + "\n"
            f"Propagation / full recomputation: {prop[0] / full[0]:.2f}× wall, "
            f"{prop[1] / full[1]:.2f}× CPU (target ≤ 0.10×).\n")


def main(argv: list[str] | None = None) -> None:
    a = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as tmp:
        body = run(a, Path(tmp))
    print(body)
    if not a.no_doc:
        head = body.rstrip().splitlines()[-1]
        title = "Propagating an erase (benchmarks/changes)"
        print(f"written to {append_section(title, body, headline=head)}")


if __name__ == "__main__":
    main()
