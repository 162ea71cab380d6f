"""``python -m benchmarks.compaction``: compaction passes over a growing streaming partition.

A table shaped like ``ods_behavior.clickevent`` (partitioned by day) receives, per
simulated maintenance interval, ``--rows`` clicks in files of ``--batch-rows`` rows (one
file per micro-batch); after each interval one compaction pass runs. Two tables side by
side in one run: *tiered* (icetide's routine pass: small files only, medium files merged
once a partition holds a full file of them) and *all below ¾* (Iceberg's default
``min-file-size-bytes``, what a pass did before). Per pass: seconds, data files rewritten,
rows rewritten (from the rewritten bytes at the table's bytes per row), files after.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.report import append_section
from icetide.config import CatalogConfig, MaintenanceConfig, Settings, SparkConfig
from icetide.lake.commit import load_table
from icetide.maintainer import actions
from icetide.maintainer.inspect import medium_bytes, table_stats
from icetide.tables.maintenance_policy import compaction_options, needs_full_compaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

SCHEMA = ("cookieId string, expendTime int, webpageId int, uid string, productId string, "
          "updateTime bigint, ts timestamp")
#: Click-like columns from an id (random-ish, so they compress as real clicks do).
COLUMNS = [
    "concat('c', cast(pmod(hash(id), 200000) as string)) cookieId",
    "cast(pmod(hash(id, 1), 300) as int) expendTime",
    "cast(pmod(hash(id, 2), 50) as int) webpageId",
    "concat('u', cast(pmod(hash(id, 3), 100000) as string)) uid",
    "concat('p', cast(pmod(hash(id, 4), 1000) as string)) productId",
    "1764150000000 + id updateTime",
    "timestamp_millis(1764150000000 + id) ts",
]


@dataclass
class Pass:
    seconds: float
    rewritten_files: int
    rewritten_bytes: int
    files_after: int
    full: bool


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compaction", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--passes", type=int, default=12, help="maintenance intervals simulated")
    p.add_argument("--rows", type=int, default=600_000,
                   help="clicks per interval (600,000: 5 minutes at 2,000/s)")
    p.add_argument("--batch-rows", type=int, default=5_000, help="rows per flow-written file")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _append(spark: SparkSession, table: str, start: int, a: argparse.Namespace) -> None:
    files = max(1, a.rows // a.batch_rows)
    spark.range(start, start + a.rows, numPartitions=files).selectExpr(*COLUMNS) \
        .sortWithinPartitions("id").writeTo(table).append()


def _pass(spark: SparkSession, table: str, policy: MaintenanceConfig, tiered: bool) -> Pass:
    jtable = load_table(spark, table)
    full = not tiered or needs_full_compaction(medium_bytes(spark, table, jtable, policy),
                                               policy)
    began = time.perf_counter()
    result = actions.rewrite_data_files(spark, table, "binpack", None,
                                        compaction_options(policy, False, full))
    seconds = time.perf_counter() - began
    files = table_stats(spark, load_table(spark, table)).data_files
    return Pass(seconds, result.rewritten_data_files_count or 0,
                result.rewritten_bytes_count or 0, files, full)


def run(spark: SparkSession, a: argparse.Namespace) -> dict[str, list[Pass]]:
    """Both tables pass by pass, which goes first alternating (neither has the warmer JVM)."""
    policy = MaintenanceConfig()
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    modes = [("all", False), ("tiered", True)]
    out: dict[str, list[Pass]] = {name: [] for name, _ in modes}
    for name, _ in modes:
        spark.sql(f"CREATE TABLE lake.bench.clicks_{name} ({SCHEMA}) USING iceberg "
                  "PARTITIONED BY (days(ts)) TBLPROPERTIES ('write.distribution-mode'='none')")
    for k in range(a.passes):
        for name, tiered in modes if k % 2 == 0 else modes[::-1]:
            table = f"lake.bench.clicks_{name}"
            _append(spark, table, k * a.rows, a)
            out[name].append(_pass(spark, table, policy, tiered))
            log.info("%s pass %d: %s", name, k + 1, out[name][-1])
    return out


def _report(a: argparse.Namespace, res: dict[str, list[Pass]], bytes_per_row: float) -> str:
    rows = ["| pass | all below ¾: s / files / M rows rewritten | tiered: s / files / M rows "
            "rewritten |", "| ---: | --- | --- |"]
    for k, (old, new) in enumerate(zip(res["all"], res["tiered"], strict=True), 1):
        cells = [f"{p.seconds:.1f} / {p.rewritten_files} / "
                 f"{p.rewritten_bytes / bytes_per_row / 1e6:.2f}" + (" (merge)" * (p.full and
                                                                    p is new))
                 for p in (old, new)]
        rows.append(f"| {k} | " + " | ".join(cells) + " |")
    total = {n: (sum(p.seconds for p in ps), sum(p.rewritten_bytes for p in ps) / bytes_per_row)
             for n, ps in res.items()}
    return (f"Command: `python -m benchmarks.compaction --passes {a.passes} --rows {a.rows} "
            f"--batch-rows {a.batch_rows}`\n\n" + "\n".join(rows) + "\n\n"
            f"Total: all below ¾ {total['all'][0]:.1f} s, {total['all'][1] / 1e6:.1f} M rows "
            f"rewritten; tiered {total['tiered'][0]:.1f} s, {total['tiered'][1] / 1e6:.1f} M "
            f"rows (time {total['tiered'][0] / total['all'][0]:.2f}×). Files after the last "
            f"pass: {res['all'][-1].files_after} and {res['tiered'][-1].files_after}.\n")


def main(argv: list[str] | None = None) -> None:
    from icetide.runtime.session import get_spark, stop_spark

    a = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as tmp:
        settings = Settings(home=Path(tmp), spark=SparkConfig(driver_memory="4g"),
                            catalog=CatalogConfig(name="lake", type="hadoop"))
        spark = get_spark(settings)
        res = run(spark, a)
        stats = table_stats(spark, load_table(spark, "lake.bench.clicks_all"))
        bytes_per_row = stats.bytes / (a.passes * a.rows)
        body = _report(a, res, bytes_per_row)
        stop_spark()
    print(body)
    if not a.no_doc:
        head = body.rstrip().splitlines()[-1]  # the totals: both selections, time ratio
        title = "Compaction passes (benchmarks/compaction)"
        print(f"written to {append_section(title, body, headline=head)}")


if __name__ == "__main__":
    main()
