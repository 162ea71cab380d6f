"""Binlog batches: transaction boundaries, resume from a mid-stream position, GTID resume,
re-planning a range, purged binlog, and the seed's memberLevel update."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mysql_cdc_helpers import Model, apply, create_items, drain, new_database, source_state
from tests.mariadb_writer import Writer

from icetide.app.lag import from_source_lag
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.errors import PositionLostError
from icetide.sources.mysql.binlog import BinlogReader
from icetide.sources.mysql.changes import Change
from icetide.sources.mysql.position import BinlogPosition, CdcPosition
from icetide.sources.mysql.schema import quote_table
from icetide.sources.mysql.snapshot import current_position
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig

pytestmark = pytest.mark.mariadb


def reader(info: MariaDBInfo, tables: list[str], use_gtid: bool = False) -> BinlogReader:
    return BinlogReader(info.connect_args("cdc"), tables, server_id=4242, use_gtid=use_gtid)


def position(info: MariaDBInfo) -> BinlogPosition:
    conn = info.connect("cdc")
    try:
        return current_position(conn)
    finally:
        conn.close()


def read_all(r: BinlogReader, start: BinlogPosition, step: int) -> tuple[list[Change], int]:
    """All changes from ``start`` in batches of ``step``, a new reader state each time."""
    changes: list[Change] = []
    batches, pos = 0, start
    while True:
        batch = r.read(pos, max_changes=step)
        changes += batch.changes
        batches += 1
        if batch.caught_up and batch.end == pos:
            return changes, batches
        pos = batch.end


def workload(info: MariaDBInfo, table: str, ops: int, next_id: int) -> None:
    writer = Writer(info, table, next_id=next_id, seed=3, pause=0)
    conn = info.connect()
    with conn.cursor() as cur:
        for _ in range(ops):
            writer._one(cur)
    conn.close()


def test_batches_end_on_transaction_boundaries(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 0)
    start = position(mariadb)
    conn = mariadb.connect()
    conn.begin()
    with conn.cursor() as cur:
        for i in range(1, 51):
            cur.execute(f"INSERT INTO `{db}`.items (id, name) VALUES (%s, 'x')", (i,))
    conn.commit()
    r = reader(mariadb, [table])
    batch = r.read(start, max_changes=1)
    assert len(batch.changes) == 50  # one transaction is never split
    assert batch.transactions == 1
    assert {c.op for c in batch.changes} == {"c"}
    assert [c.seq for c in batch.changes] == sorted(c.seq for c in batch.changes)
    assert len({c.ts for c in batch.changes}) == 1  # the commit time
    after = r.read(batch.end)
    assert after.changes == [] and after.caught_up


def test_resume_from_any_committed_position_gives_the_same_changes(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 200)
    start = position(mariadb)
    workload(mariadb, table, 400, 200)
    r = reader(mariadb, [table])
    whole, _ = read_all(r, start, 100_000)
    pieces, batches = read_all(reader(mariadb, [table]), start, 7)
    assert batches > 20
    assert pieces == whole
    assert len(whole) >= 300
    by_gtid, _ = read_all(reader(mariadb, [table], use_gtid=True), start, 50)
    assert [c.seq for c in by_gtid] == [c.seq for c in whole]


def test_source_resumes_mid_stream_and_replans_exactly(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 300)
    config = MySqlSourceConfig(name=db, connection=mariadb.connect_args("cdc"),
                               include=(rf"{db}\.items",))
    first = MySqlSource(config)
    models: dict[str, Model] = {}
    pos = drain(first, first.initial_position(), models)
    assert CdcPosition.from_json(pos).phase == "binlog"
    workload(mariadb, table, 300, 300)
    batch = first.plan(pos, 40)
    assert batch is not None
    planned = first.rows(batch)
    apply(models[table], planned[table], first.schema(table))
    first.close()

    second = MySqlSource(config)  # restart from the committed end
    replanned = second.plan_to(batch.start, batch.end)
    assert second.rows(replanned) == planned
    assert replanned.info["adopted"] == [table]  # schema learned from the binlog's table map
    drain(second, batch.end, models, 25)
    assert models[table] == source_state(mariadb, second.schema(table))
    second.close()


def purge_all_but_current(conn: Any) -> None:
    """PURGE BINARY LOGS waits for InnoDB's binlog checkpoint: retry until done."""
    deadline = time.monotonic() + 30
    with conn.cursor() as cur:
        while True:
            cur.execute("SHOW MASTER STATUS")
            current = cur.fetchone()[0]
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            if [r[0] for r in cur.fetchall()] == [current]:
                return
            assert time.monotonic() < deadline, "binlogs were not purged within 30 s"
            time.sleep(0.2)


def test_purged_binlog_raises_position_lost(tmp_path: Path) -> None:
    with EmbeddedMariaDB(tmp_path / "purge") as info:
        db = new_database(info)
        table = create_items(info, db, 10)
        start = position(info)
        conn = info.connect()
        with conn.cursor() as cur:
            cur.execute(f"UPDATE `{db}`.items SET qty = 0")
            cur.execute("FLUSH BINARY LOGS")
            cur.execute(f"UPDATE `{db}`.items SET qty = 1")
            cur.execute("FLUSH BINARY LOGS")
        purge_all_but_current(conn)
        conn.close()
        with pytest.raises(PositionLostError) as lost:
            reader(info, [table]).read(start)
        message = str(lost.value)
        assert start.file in message and str(start.pos) in message
        assert f"`icetide cdc resnapshot {table}`" in message
        with pytest.raises(PositionLostError, match="1236"):
            reader(info, [table], use_gtid=True).read(start)
        source = MySqlSource(MySqlSourceConfig(name="p", connection=info.connect_args("cdc"),
                                               include=(rf"{db}\..*",)))
        with pytest.raises(PositionLostError, match=start.file):
            source.plan(CdcPosition("binlog", start).to_json())
        source.close()


def test_seed_update_of_member_level_is_an_update(mariadb: MariaDBInfo) -> None:
    conn = mariadb.connect()
    seed_shop(conn, "user_db")
    source = MySqlSource(MySqlSourceConfig(name="shop", connection=mariadb.connect_args("cdc"),
                                           include=(r"user_db\.(products|user_member)",)))
    models: dict[str, Model] = {}
    pos = drain(source, source.initial_position(), models)
    assert len(models["user_db.products"]) == 9 and len(models["user_db.user_member"]) == 5
    assert models["user_db.user_member"][("555655",)][3] == 3
    with conn.cursor() as cur:
        cur.execute("update user_db.user_member set memberLevel = 2 where userid = '555655'")
        cur.execute("update user_db.products set description = 'test666', product_price = 8.1 "
                    "where productId = '1'")
    batch = source.plan(pos)
    assert batch is not None and batch.records == 2
    rows = source.rows(batch)
    member = rows["user_db.user_member"]
    assert [(r[0], r[3], r[5]) for r in member] == [("555655", 2, "u")]
    product = rows["user_db.products"][0]
    assert product[:4] == ("1", "test01", "test666", Decimal("8.1000"))
    assert product[5] == "u"
    conn.close()
    source.close()


def test_lag_reports_seconds_behind(mariadb: MariaDBInfo) -> None:
    """Caught up: 0 s behind; with a change pending: the age of that change."""
    db = new_database(mariadb)
    table = create_items(mariadb, db, 5)
    source = MySqlSource(MySqlSourceConfig(name=db, connection=mariadb.connect_args("cdc"),
                                           include=(rf"{db}\.items",)))
    pos = drain(source, source.initial_position(), {})
    assert source.lag(pos)["seconds_behind"] == 0.0
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {quote_table(table)} SET qty = qty + 1 WHERE id = 1")
    conn.commit()
    conn.close()
    time.sleep(1.5)
    lag = from_source_lag(source.key, source.lag(pos))
    assert lag.unit == "seconds" and lag.behind is not None and 1.0 <= lag.behind < 30
    source.close()
