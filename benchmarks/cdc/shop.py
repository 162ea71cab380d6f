"""The MariaDB side and the pipeline of ``python -m benchmarks.cdc``: the ``items`` table,
its changes, a pipeline folder following it, one ``--once`` run, and the check that a lake
table equals it (shared by the Iceberg measurement and ``--formats``)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo

ITEMS = ("CREATE TABLE `{db}`.items (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, "
         "qty INT, price DECIMAL(10,4), updated TIMESTAMP NULL, note VARCHAR(100))")
CHECKSUM = ("SELECT count(*), sum(qty), sum(crc32(concat_ws('|', CAST(id AS {s}), name, "
            "CAST(qty AS {s}), CAST(price AS {s})))) FROM {t}")


def fill(info: MariaDBInfo, db: str, rows: int) -> None:
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db}`")
        cur.execute(ITEMS.format(db=db))
        for at in range(1, rows + 1, 10_000):
            data = [(i, f"item{i}", i % 17, f"{i / 7:.4f}", f"note {i}")
                    for i in range(at, min(at + 10_000, rows + 1))]
            cur.executemany(f"INSERT INTO `{db}`.items VALUES (%s, %s, %s, %s, NOW(), %s)", data)
    conn.close()


def pipeline(folder: Path, info: MariaDBInfo, flows: str, database: str = "bench_cdc") -> Path:
    """``folder`` with a pipeline (source ``shop``, database ``database``) of ``flows``."""
    folder.mkdir(parents=True)
    os.environ["ICETIDE_BENCH_SHOP_PASSWORD"] = info.cdc_password  # secrets: environment only
    (folder / "icetide-pipeline.yml").write_text(
        f"name: {database}\ncatalog: lake\ndatabase: {database}\nsources:\n"
        f"  shop: {{type: mysql, host: {info.host}, port: {info.port}, user: {info.cdc_user}, "
        "password_env: ICETIDE_BENCH_SHOP_PASSWORD, chunk_size: 20000, max_records: 250000}\n")
    (folder / "flows.py").write_text(flows)
    return folder


def run_once(spark: Any, settings: Settings, folder: Path) -> tuple[float, int, int]:
    """Seconds, batches and rows of one ``--once`` run of the pipeline."""
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline

    with PipelineRun(spark, settings, load_pipeline(folder)) as run:
        began = time.perf_counter()
        done = run.run_once()
        took = time.perf_counter() - began
    results = [r for flow in done.values() for r in flow]
    return took, len(results), sum(r.rows for r in results)


def verify(spark: Any, info: MariaDBInfo, db: str, when: str,
           lake_table: str = "lake.bench_cdc.items") -> tuple[int, int, int]:
    """The lake table equals the MariaDB table (count, sum(qty), CRC32 of every row)."""
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute(CHECKSUM.format(s="CHAR", t=f"`{db}`.items"))
        row = cur.fetchone()
    conn.close()
    assert row is not None
    upstream = tuple(int(v or 0) for v in row)
    lake = tuple(int(v or 0) for v in spark.sql(
        CHECKSUM.format(s="STRING", t=lake_table)).first())
    if lake != upstream:
        raise SystemExit(f"after the {when}: {lake_table} (count, sum(qty), crc) = {lake} but "
                         f"MariaDB has {upstream}: the pipeline did not apply the changes")
    return lake  # type: ignore[return-value]


def update(info: MariaDBInfo, db: str, updates: int) -> None:
    conn = info.connect()
    with conn.cursor() as cur:
        for at in range(1, updates + 1, 1000):
            cur.execute(f"UPDATE `{db}`.items SET qty = qty + 1, updated = NOW() "
                        "WHERE id BETWEEN %s AND %s", (at, min(at + 999, updates)))
    conn.close()


def position(info: MariaDBInfo) -> tuple[str, int]:
    conn = info.connect("cdc")
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    conn.close()
    assert row is not None, "the binary log is off"
    return str(row[0]), int(row[1])
