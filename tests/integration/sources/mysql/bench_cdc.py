"""Throughput of the MySQL CDC source on an embedded MariaDB (not a test; run directly):

    .venv/bin/python tests/integration/sources/mysql/bench_cdc.py [--rows 200000] [--updates 100000]

Prints snapshot rows/s (200k-row table, keyset chunks) and binlog decode rows/s for 100k
updates: raw pymysqlreplication vs. BinlogReader vs. the source's rows (collapsed,
converted). Uses a private server in a temporary directory.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable

from mysql_cdc_helpers import create_items, new_database
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import TableMapEvent, UpdateRowsEvent

from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.sources.mysql.binlog import BinlogReader
from icetide.sources.mysql.position import BinlogPosition, CdcPosition
from icetide.sources.mysql.schema import read_schema
from icetide.sources.mysql.snapshot import current_position, iter_chunks, open_view
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig


def timed(label: str, rows: int, run: Callable[[], int]) -> None:
    started = time.perf_counter()
    got = run()
    took = time.perf_counter() - started
    print(f"{label:<58} {got:>8} rows {took:7.2f} s {got / took:>10,.0f} rows/s")
    assert got == rows, (label, got, rows)


def snapshot_raw(info: MariaDBInfo, db: str) -> int:
    conn = info.connect("cdc")
    open_view(conn)
    schema = read_schema(conn, db, "items")
    return sum(len(c.rows) for c in iter_chunks(conn, schema, chunk_size=10_000))


def snapshot_source(info: MariaDBInfo, db: str) -> int:
    source = MySqlSource(MySqlSourceConfig(name="bench", connection=info.connect_args("cdc"),
                                           include=(rf"{db}\.items",), chunk_size=10_000))
    pos, total = source.initial_position(), 0
    while CdcPosition.from_json(pos).phase == "snapshot":
        batch = source.plan(pos, 50_000)
        assert batch is not None
        total += sum(len(r) for r in source.rows(batch).values())
        pos = batch.end
    source.close()
    return total


def binlog_raw(info: MariaDBInfo, start: BinlogPosition) -> int:
    stream = BinLogStreamReader(
        connection_settings=info.connect_args("cdc"), server_id=901, resume_stream=True,
        log_file=start.file, log_pos=start.pos, only_events=[UpdateRowsEvent, TableMapEvent])
    total = sum(len(ev.rows) for ev in stream if isinstance(ev, UpdateRowsEvent))
    stream.close()
    return total


def binlog_reader(info: MariaDBInfo, table: str, start: BinlogPosition) -> int:
    reader = BinlogReader(info.connect_args("cdc"), [table], server_id=902)
    total, pos = 0, start
    while True:
        batch = reader.read(pos, max_changes=50_000)
        total += len(batch.changes)
        if batch.caught_up and batch.end == pos:
            break
        pos = batch.end
    reader.close()
    return total


def binlog_source(info: MariaDBInfo, table: str, start: BinlogPosition) -> int:
    source = MySqlSource(MySqlSourceConfig(name="bench2", connection=info.connect_args("cdc"),
                                           include=(table.replace(".", r"\."),)))
    total, pos = 0, CdcPosition("binlog", start).to_json()
    while (batch := source.plan(pos, 50_000)) is not None:
        total += batch.records
        source.rows(batch)  # collapse + convert
        pos = batch.end
    source.close()
    return total


def updates(info: MariaDBInfo, db: str, count: int, per_tx: int) -> BinlogPosition:
    conn = info.connect("cdc")
    start = current_position(conn)
    conn.close()
    app = info.connect(database=db)
    with app.cursor() as cur:
        for low in range(1, count + 1, per_tx):
            cur.execute("UPDATE items SET qty = qty + 1, note = CONCAT(note, '+') "
                        "WHERE id BETWEEN %s AND %s", (low, low + per_tx - 1))
    app.close()
    return start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--updates", type=int, default=100_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedMariaDB(tmp) as info:
        db = new_database(info, "bench")
        table = create_items(info, db, args.rows)
        timed("snapshot: keyset chunks of 10k (pymysql only)", args.rows,
              lambda: snapshot_raw(info, db))
        timed("snapshot: MySqlSource batches of 50k (+ Spark-ready rows)", args.rows,
              lambda: snapshot_source(info, db))
        for per_tx in (args.updates, 100, 1):
            count = args.updates if per_tx > 1 else args.updates // 5
            start = updates(info, db, count, per_tx)
            print(f"-- {count} updates, {per_tx} per transaction")
            timed("binlog: raw pymysqlreplication (rows decoded)", count,
                  lambda s=start: binlog_raw(info, s))  # type: ignore[misc]
            timed("binlog: BinlogReader (change records, tx boundaries)", count,
                  lambda s=start: binlog_reader(info, table, s))  # type: ignore[misc]
            timed("binlog: MySqlSource (+ collapse, converted rows)", count,
                  lambda s=start: binlog_source(info, table, s))  # type: ignore[misc]


if __name__ == "__main__":
    main()
