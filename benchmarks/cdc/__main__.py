"""``python -m benchmarks.cdc``: MySQL/MariaDB CDC into Iceberg, end to end.

On a private embedded MariaDB (Debian ``mariadb-server``) and a local Spark:

1. **snapshot** — a ``--rows`` (default 1M) table copied by a ``create_auto_cdc_flow``
   flow (``icetide run --once`` in-process): rows/s from the first batch to the
   switch to the binlog phase;
2. **binlog apply** — ``--updates`` (default 200k) single-row-image updates (1 000 rows per
   statement), applied by the same flow: rows/s, next to the raw ``mysql-replication``
   decode rate of exactly the same binlog range measured in the same run (target:
   apply ≥ 0.5 × raw);
3. **MERGE** — one fixed batch of ``--changes`` (10k: 60 % updates, 20 % deletes, 20 %
   inserts) merged with the CDC sink (deduplicate on ``_cdc_pos``, marker in the same
   commit) into primary-key targets of each ``--merge-sizes`` (default 1M and 10M rows):
   seconds, and the growth from the smallest to the largest (target ≤ 1.5×), without and
   with the key predicate in ``ON`` (see ``merge.py``).

After the snapshot and after the apply the lake table must equal the MariaDB table (row
count, sum of ``qty`` and a CRC32 checksum over every row's id/name/qty/price), and the
apply run must have applied exactly ``--updates`` rows; otherwise the benchmark stops
instead of reporting a rate of a run that did not do the work.

Appends the results (with date and machine) to docs/benchmarks.md. Run it on a quiet
machine; the full sizes need ~4 GB of RAM and a few minutes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.cdc import formats, merge, shop
from benchmarks.cdc.format_report import FORMATS, parse_formats, parse_rates
from benchmarks.report import append_section
from icetide.config import CatalogConfig, Settings, SparkConfig
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.runtime.metastore.service import stop_metastore

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql
dp.create_streaming_table("bench_cdc.items", primary_key=["id"])
dp.create_auto_cdc_flow(target="bench_cdc.items", source=mysql.binlog("shop", table="{db}.items"),
                        keys=["id"], sequence_by="_pos")
'''


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cdc", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000, help="snapshot table rows")
    p.add_argument("--updates", type=int, default=200_000, help="binlog row updates")
    p.add_argument("--changes", type=int, default=10_000, help="rows of the fixed MERGE batch")
    p.add_argument("--merge-sizes", default="1000000,10000000",
                   help="target sizes for the MERGE measurement, comma-separated")
    p.add_argument("--merge-only", action="store_true", help="only the MERGE measurement")
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--formats", default="",
                   help="instead: CDC apply and freshness into these table formats, "
                        f"comma-separated ({', '.join(FORMATS)}; formats.py)")
    p.add_argument("--rates", default="2,snapshot",
                   help="--formats: changes/s of the freshness runs ('snapshot': the "
                        "slowest snapshot's rows/s)")
    p.add_argument("--freshness-seconds", type=float, default=60.0,
                   help="--formats: seconds of writes per freshness run")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _raw_decode(info: MariaDBInfo, start: tuple[str, int], end: tuple[str, int]) -> float:
    """Row images/s of plain pymysqlreplication over ``[start, end)``."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import TableMapEvent, UpdateRowsEvent

    stream = BinLogStreamReader(
        connection_settings=info.connect_args("cdc"), server_id=977, resume_stream=True,
        log_file=start[0], log_pos=start[1], blocking=False,
        only_events=[UpdateRowsEvent, TableMapEvent])
    rows, began = 0, time.perf_counter()
    for event in stream:
        if isinstance(event, UpdateRowsEvent):
            rows += len(event.rows)
        if (stream.log_file, stream.log_pos) >= end:
            break
    took = time.perf_counter() - began
    stream.close()
    return rows / took


def _measure(spark: Any, settings: Settings, info: MariaDBInfo, tmp: Path,
             a: argparse.Namespace) -> dict[str, float]:
    db = "bench_shop"
    shop.fill(info, db, a.rows)
    folder = shop.pipeline(tmp / "pipeline", info, FLOWS.format(db=db))
    snapshot, snap_batches, snap_rows = shop.run_once(spark, settings, folder)
    count, _, _ = shop.verify(spark, info, db, "snapshot")
    start = shop.position(info)
    shop.update(info, db, a.updates)
    end = shop.position(info)
    raw = _raw_decode(info, start, end)
    apply, batches, rows = shop.run_once(spark, settings, folder)
    shop.verify(spark, info, db, "binlog apply")
    if rows != a.updates or count != a.rows:
        raise SystemExit(f"apply run committed {rows} rows in {batches} batches, expected "
                         f"{a.updates} (snapshot: {count} rows, expected {a.rows})")
    return {"snapshot_s": snapshot, "snapshot_rps": a.rows / snapshot,
            "snapshot_batches": snap_batches, "snapshot_rows": snap_rows, "apply_s": apply,
            "apply_rps": a.updates / apply, "apply_batches": batches, "raw_rps": raw}


def _cdc_rows(a: argparse.Namespace, r: dict[str, float]) -> str:
    ratio = r["apply_rps"] / r["raw_rps"]
    return f"""\
| snapshot of a {a.rows:,}-row table | {r['snapshot_rps']:,.0f} rows/s ({r['snapshot_s']:.1f}s, \
{r['snapshot_batches']:.0f} batches) | |
| binlog apply, {a.updates:,} updates | {r['apply_rps']:,.0f} rows/s ({r['apply_s']:.1f}s, \
{r['apply_batches']:.0f} batch(es); lake = MariaDB checked) | ≥ 0.5 × raw |
| raw mysql-replication decode, same range | {r['raw_rps']:,.0f} rows/s | |
| apply / raw | {ratio:.2f} | ≥ 0.5 |
"""


def _merge_rows(a: argparse.Namespace, r: dict[str, float]) -> str:
    sizes = [int(s) for s in a.merge_sizes.split(",")]
    out = ""
    for label, prefix in (("without key predicate (before)", "merge_plain_"),
                          ("with key predicate (MergeSink now)", "merge_")):
        times = ", ".join(f"{s:,} rows: {r[f'{prefix}{s}']:.2f}s" for s in sizes)
        growth = r[f"{prefix}{sizes[-1]}"] / r[f"{prefix}{sizes[0]}"]
        out += (f"| MERGE of {a.changes:,} changes, {label} | {times} | |\n"
                f"| MERGE growth {sizes[0]:,} → {sizes[-1]:,} rows, {label} | {growth:.2f}× "
                "| ≤ 1.5× |\n")
    return out


def _report(a: argparse.Namespace, r: dict[str, float], load: tuple[float, float]) -> str:
    only = " --merge-only" if a.merge_only else ""
    return f"""Command: `python -m benchmarks.cdc --rows {a.rows} --updates {a.updates} \
--changes {a.changes} --merge-sizes {a.merge_sizes}{only}` \
(1-minute load average {load[0]:.1f} at start, {load[1]:.1f} at end)

| measurement | result | target |
|---|---|---|
{'' if a.merge_only else _cdc_rows(a, r)}{_merge_rows(a, r)}"""


def _formats(a: argparse.Namespace, load_start: float) -> None:
    """``--formats``: the comparison of table formats (formats.py), in a session with Hudi."""
    from icetide.runtime.session import get_spark

    parse_formats(a.formats)  # a bad value is refused before anything starts
    parse_rates(a.rates)
    with tempfile.TemporaryDirectory(prefix="icetide-bench-cdc-") as tmp_name:
        tmp = Path(tmp_name)
        settings = Settings(home=tmp / "home", catalog=CatalogConfig(),
                            spark=SparkConfig(driver_memory=a.driver_memory, hudi=True))
        spark = get_spark(settings)
        try:
            with EmbeddedMariaDB(tmp / "mariadb") as info:
                rows = formats.run(spark, settings, info, tmp, a)
        finally:  # the home's catalog service, started by Spark
            stop_metastore(settings)
    body = (f"Command: `python -m benchmarks.cdc --formats {a.formats} --rows {a.rows} "
            f"--updates {a.updates} --rates {a.rates} --freshness-seconds "
            f"{a.freshness_seconds:g}` (1-minute load average {load_start:.1f} at start, "
            f"{os.getloadavg()[0]:.1f} at end)\n\n| measurement | result |\n|---|---|\n{rows}")
    print(body)
    if not a.no_doc:
        title = "CDC by table format (benchmarks/cdc --formats)"
        print(f"written to {append_section(title, body)}")


def main(argv: list[str] | None = None) -> None:
    from icetide.runtime.session import get_spark

    a = _args(argv)
    load_start = os.getloadavg()[0]
    if a.formats:
        _formats(a, load_start)
        return
    with tempfile.TemporaryDirectory(prefix="icetide-bench-cdc-") as tmp_name:
        tmp = Path(tmp_name)
        settings = Settings(home=tmp / "home", spark=SparkConfig(driver_memory=a.driver_memory),
                            catalog=CatalogConfig())
        spark = get_spark(settings)
        results: dict[str, float] = {}
        try:
            if not a.merge_only:
                with EmbeddedMariaDB(tmp / "mariadb") as info:
                    results = _measure(spark, settings, info, tmp, a)
            sizes = [int(s) for s in a.merge_sizes.split(",")]
            results.update(merge.measure(spark, sizes, a.changes))
        finally:  # the home's catalog service, started by Spark
            stop_metastore(settings)
    body = _report(a, results, (load_start, os.getloadavg()[0]))
    print(body)
    if not a.no_doc:
        print(f"written to {append_section('MySQL CDC (benchmarks/cdc)', body)}")


if __name__ == "__main__":
    main()
