"""``python -m benchmarks.cdc --formats iceberg,hudi_mor,hudi_cow``: the same MariaDB
changes applied by one CDC flow per table format, in one Spark session with Hudi.

1. **snapshot**, per format: the ``--rows`` table copied into the format's target
   (``icetide run --once`` in-process), rows/s; the target must equal MariaDB after it.
2. **apply**, per format: ``--updates`` row updates (1 000 per statement, written once,
   so every format reads the same binlog range) applied by the same flow: rows/s and the
   CPU seconds of this process and its children but MariaDB (driver, Spark JVM, Python
   workers, metastore) per 1 M changes; the target must equal MariaDB again and the run
   must have applied exactly ``--updates`` rows.
3. **freshness**, per format and ``--rates`` (changes/s; ``snapshot`` = the slowest
   snapshot rate of step 1, so every format gets the same changes): the flow runs
   continuously (``run_forever``, the pipeline's default trigger; the window opens once
   it has committed a first write) while a writer updates rows at that rate for
   ``--freshness-seconds``; each write's freshness is the time from its MariaDB commit to
   the first lake commit holding it (format_report.py). Writes the run had not committed
   a window later are counted as such; a ``--once`` run then catches up and the target
   must equal MariaDB before the next run.

Iceberg is the MERGE icetide's CDC sink does (merge-on-read deletes); Hudi is icetide's
one upsert per batch into a merge-on-read or copy-on-write table (lake/hudi.py), with no
compaction during the run (maintenance does that, none falls due in the window).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.cdc import shop
from benchmarks.cdc.format_report import (
    FORMATS,
    LakeCommit,
    Tick,
    achieved,
    apply_rows,
    freshness_ms,
    freshness_rows,
    parse_formats,
    parse_rates,
)
from benchmarks.cpu import CpuMeter, descendants
from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo

DB = "bench_shop"
DATABASE = "bench_fmt"
FLOW = '''
from icetide import pipelines as dp
from icetide.sources import mysql
dp.create_streaming_table("{database}.items_{name}", primary_key=["id"]{extra})
dp.create_auto_cdc_flow(target="{database}.items_{name}",
                        source=mysql.binlog("shop", table="{db}.items"),
                        keys=["id"], sequence_by="_pos")
'''


def flows(name: str) -> str:
    """The pipeline of format ``name``: one CDC flow from ``items`` into its target."""
    kind, table_type = FORMATS[name]
    extra = "" if kind == "iceberg" else (
        f', format="hudi", table_properties={{"hoodie.table.type": "{table_type}"}}')
    return FLOW.format(database=DATABASE, name=name, extra=extra, db=DB)


def ident(name: str) -> str:
    return f"lake.{DATABASE}.items_{name}"


def _lake_table(spark: Any, name: str) -> str:
    """A SQL name of format ``name``'s target (a Hudi table: a view over its files)."""
    if FORMATS[name][0] == "iceberg":
        return ident(name)
    from icetide.lake.hudi import default_path

    view = f"bench_items_{name}"
    spark.read.format("hudi").load(default_path(spark, ident(name))).createOrReplaceTempView(view)
    return view


def _own_pids(info: MariaDBInfo) -> list[int]:
    """This process and its children, MariaDB's aside."""
    pid_file = Path(info.socket).parent / "mariadbd.pid" if info.socket else None
    skip: set[int] = set()
    if pid_file is not None and pid_file.exists():
        skip = set(descendants(int(pid_file.read_text().split()[0])))
    return [p for p in descendants(os.getpid()) if p not in skip]


def _snapshot(spark: Any, settings: Settings, info: MariaDBInfo, folder: Path, name: str,
              rows: int) -> dict[str, float]:
    took, batches, _ = shop.run_once(spark, settings, folder)
    count, _, _ = shop.verify(spark, info, DB, f"snapshot into {name}", _lake_table(spark, name))
    if count != rows:
        raise SystemExit(f"the snapshot into {name} holds {count} rows, expected {rows}")
    return {"snapshot_s": took, "snapshot_rps": rows / took, "snapshot_batches": batches}


def _apply(spark: Any, settings: Settings, info: MariaDBInfo, folder: Path, name: str,
           updates: int) -> dict[str, float]:
    meter = CpuMeter({"bench": lambda: _own_pids(info)})
    meter.start()
    took, batches, rows = shop.run_once(spark, settings, folder)
    cpu = meter.stop()["bench"]
    shop.verify(spark, info, DB, f"binlog apply into {name}", _lake_table(spark, name))
    if rows != updates:
        raise SystemExit(f"the apply into {name} committed {rows} rows in {batches} batches, "
                         f"expected {updates}")
    return {"apply_s": took, "apply_rps": updates / took, "apply_batches": batches,
            "apply_cpu_s": cpu}


def measure_apply(spark: Any, settings: Settings, info: MariaDBInfo, tmp: Path,
                  a: argparse.Namespace, names: list[str]) -> dict[str, dict[str, float]]:
    """Steps 1 and 2 for every format of ``names``; their pipeline folders in ``tmp``."""
    shop.fill(info, DB, a.rows)
    out: dict[str, dict[str, float]] = {}
    for name in names:
        folder = shop.pipeline(tmp / name, info, flows(name), DATABASE)
        out[name] = _snapshot(spark, settings, info, folder, name, a.rows)
    shop.update(info, DB, a.updates)
    for name in names:
        out[name].update(_apply(spark, settings, info, tmp / name, name, a.updates))
    return out


def _coordinate(end: Any) -> tuple[int, int] | None:
    """A marker's binlog end as a sort key (``None``: not a binlog position)."""
    from icetide.sources.mysql.position import file_seq

    for value in dict(end).values():
        if isinstance(value, dict) and "file" in value and "pos" in value:
            return file_seq(str(value["file"])), int(value["pos"])
    return None


def lake_commits(spark: Any, settings: Settings, name: str) -> list[LakeCommit]:
    """Every commit of format ``name``'s flow: when visible, and its binlog end."""
    from icetide.model.markers import Marker

    found: list[tuple[int, Any]] = []
    if FORMATS[name][0] == "iceberg":
        from icetide.lake.commit import read_metadata

        for snap in read_metadata(spark, ident(name)).ancestors():
            marker = Marker.from_summary(snap.summary)
            if marker is not None:
                found.append((snap.timestamp_ms, marker.end))
    else:
        from icetide.lake.hudi import default_path
        from icetide.lake.hudi_timeline import HudiTimeline

        timeline = HudiTimeline(default_path(spark, ident(name)), settings)
        found = [(timeline.committed_ms(i), m.end) for i, m in timeline.markers()]
    return [LakeCommit(at, c) for at, end in found if (c := _coordinate(end)) is not None]


def _write(info: MariaDBInfo, rate: float, seconds: float, rows: int) -> list[Tick]:
    """Updates at ``rate`` rows/s for ``seconds`` (a transaction every 0.1 s, or every
    1/rate s below 10/s), cycling over the table's ids; a tick per transaction."""
    from icetide.sources.mysql.position import file_seq

    every = max(0.1, 1 / rate)
    per = max(1, round(rate * every))
    conn = info.connect()
    ticks, at, began = [], 1, time.monotonic()
    with conn.cursor() as cur:
        while (now := time.monotonic()) < began + seconds:
            last = min(at + per - 1, rows)
            cur.execute(f"UPDATE `{DB}`.items SET qty = qty + 1, updated = NOW() "
                        "WHERE id BETWEEN %s AND %s", (at, last))
            conn.commit()
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
            assert row is not None, "the binary log is off"
            ticks.append(Tick(int(time.time() * 1000), (file_seq(str(row[0])), int(row[1])),
                              last - at + 1))
            at = 1 if last >= rows else last + 1
            time.sleep(max(0.0, now + every - time.monotonic()))
    conn.close()
    return ticks


def _committed(spark: Any, settings: Settings, name: str, tick: Tick, wait: float) -> bool:
    """Whether a lake commit of ``name`` holds ``tick`` within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while not any(c.end >= tick.end for c in lake_commits(spark, settings, name)):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)
    return True


def measure_freshness(spark: Any, settings: Settings, info: MariaDBInfo, tmp: Path, name: str,
                      rate: float, seconds: float, rows: int
                      ) -> tuple[list[int], tuple[int, float]]:
    """Step 3 for one format and rate: the writes' freshness (ms), how many writes and
    the rows/s they reached.
    The window starts once the run has committed a first write (its start not measured)."""
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline

    stop = threading.Event()
    with PipelineRun(spark, settings, load_pipeline(tmp / name)) as run:
        worker = threading.Thread(target=run.run_forever, args=(stop,), daemon=True)
        worker.start()
        if not _committed(spark, settings, name, _write(info, 1.0, 0.5, rows)[-1], 600.0):
            raise SystemExit(f"the continuous run of {name} committed nothing in 600 s")
        ticks = _write(info, rate, seconds, rows)
        _committed(spark, settings, name, ticks[-1], max(30.0, seconds))  # catch up, bounded
        stop.set()
        worker.join(timeout=300)
    return (freshness_ms(ticks, lake_commits(spark, settings, name)),
            (len(ticks), achieved(ticks, seconds)))


def rates_of(text: str, applied: dict[str, dict[str, float]]) -> dict[str, float]:
    """``--rates`` as changes/s by label; ``snapshot``: the slowest snapshot's rows/s."""
    slowest = min((r["snapshot_rps"] for r in applied.values()), default=0.0)
    return {f"{slowest:,.0f} (the snapshot rate)" if rate == "snapshot" else rate:
            slowest if rate == "snapshot" else float(rate) for rate in parse_rates(text)}


def run(spark: Any, settings: Settings, info: MariaDBInfo, tmp: Path,
        a: argparse.Namespace) -> str:
    """Steps 1 to 3 for ``a.formats``; the report's rows."""
    names = parse_formats(a.formats)
    applied = measure_apply(spark, settings, info, tmp, a, names)
    fresh: dict[str, dict[str, list[int]]] = {n: {} for n in names}
    writes: dict[str, dict[str, tuple[int, float]]] = {n: {} for n in names}
    for label, rate in rates_of(a.rates, applied).items():
        for name in names:
            fresh[name][label], writes[name][label] = measure_freshness(
                spark, settings, info, tmp, name, rate, a.freshness_seconds, a.rows)
            shop.run_once(spark, settings, tmp / name)  # what the window left, untimed
            shop.verify(spark, info, DB, f"freshness run of {name}", _lake_table(spark, name))
    return apply_rows(a.updates, applied) + freshness_rows(fresh, writes)
