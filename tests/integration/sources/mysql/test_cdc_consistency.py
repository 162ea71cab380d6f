"""Snapshot under a concurrent writer + binlog from the snapshot's position reproduces the
table exactly; a snapshot killed midway resumes from its last committed chunk."""

from __future__ import annotations

import time
from typing import Any

import pytest
from mysql_cdc_helpers import Model, apply, create_items, drain, new_database, source_state
from tests.mariadb_writer import Writer

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.model.source import Position
from icetide.sources.mysql.position import CdcPosition
from icetide.sources.mysql.schema import read_schema
from icetide.sources.mysql.snapshot import Method, close_view, iter_chunks, open_view, read_chunk
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig

pytestmark = pytest.mark.mariadb


def make_source(info: MariaDBInfo, db: str, method: Method = "auto") -> MySqlSource:
    return MySqlSource(MySqlSourceConfig(
        name=db, connection=info.connect_args("cdc"), include=(rf"{db}\..*",),
        chunk_size=200, snapshot_method=method))


def follow(source: MySqlSource, pos: Position, models: dict[str, Model], batches: int) -> Position:
    """A few batches while the writer runs (draining would never end)."""
    for _ in range(batches):
        batch = source.plan(pos, 300)
        if batch is None:
            break
        for table, rows in source.rows(batch).items():
            apply(models.setdefault(table, {}), rows, source.schema(table))
        pos = batch.end
    return pos


@pytest.mark.parametrize("method", ["consistent-snapshot", "flush-lock"])
def test_snapshot_and_binlog_reproduce_the_table(mariadb: MariaDBInfo, method: Method) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 3000)
    writer = Writer(mariadb, table, next_id=3000)
    writer.start()
    time.sleep(0.2)
    source = make_source(mariadb, db, method)
    models: dict[str, Model] = {}
    pos = source.initial_position()
    ops_at_view = writer.ops
    while CdcPosition.from_json(pos).phase == "snapshot":
        batch = source.plan(pos, 400)
        assert batch is not None and batch.info["method"] == method
        apply(models.setdefault(table, {}), source.rows(batch)[table] if batch.records else [],
              source.schema(table))
        pos = batch.end
        time.sleep(0.02)  # let the writer interleave with the chunks
    assert writer.ops > ops_at_view, "the writer must run during the snapshot"
    pos = follow(source, pos, models, batches=5)  # binlog while the writer still runs
    writer.stop()
    drain(source, pos, models, 300)
    expected = source_state(mariadb, source.schema(table))
    assert len(expected) > 2000
    assert models[table] == expected
    source.close()


def test_killed_snapshot_resumes_from_the_last_committed_chunk(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 2000)
    writer = Writer(mariadb, table, next_id=2000, seed=11)
    writer.start()
    first = make_source(mariadb, db)
    models: dict[str, Model] = {}
    pos = first.initial_position()
    for _ in range(3):  # commit three chunks, then "kill -9"
        batch = first.plan(pos, 250)
        assert batch is not None
        apply(models.setdefault(table, {}), first.rows(batch)[table], first.schema(table))
        pos = batch.end
    committed = CdcPosition.from_json(pos)
    after = committed.tables[0].after
    assert committed.tables[0].rows == 750 and after is not None and after[0] >= 750
    first_view = first._view
    first.close()
    time.sleep(0.3)

    second = make_source(mariadb, db)  # a new process: resumes from the stored position
    batch = second.plan(pos, 250)
    assert batch is not None
    assert second._view is not None and first_view is not None
    assert second._view.position.key() > first_view.position.key()  # a newer view ...
    assert batch.end["file"] == committed.binlog.file  # ... but the binlog start is kept
    first_key = min(r[0] for r in second.rows(batch)[table])
    assert first_key > after[0]  # continues after the committed key
    apply(models[table], second.rows(batch)[table], second.schema(table))
    pos = follow(second, batch.end, models, batches=8)
    writer.stop()
    drain(second, pos, models, 400)
    assert models[table] == source_state(mariadb, second.schema(table))
    second.close()


def test_keyset_chunks_of_a_composite_key_read_every_row_once(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    conn = mariadb.connect(database=db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE pairs (a INT NOT NULL, b VARCHAR(8) NOT NULL, v INT, "
                    "PRIMARY KEY (a, b))")
        cur.executemany("INSERT INTO pairs VALUES (%s, %s, %s)",
                        [(a, f"k{b:02d}", a * b) for a in range(5) for b in range(13)])
    conn.close()
    cdc = mariadb.connect("cdc")
    view = open_view(cdc)
    schema = read_schema(cdc, db, "pairs")
    calls: list[tuple[str, int, tuple[Any, ...] | None]] = []
    chunks = list(iter_chunks(cdc, schema, None, 7, lambda *a: calls.append(a)))
    close_view(cdc)
    keys = [(r[0], r[1]) for c in chunks for r in c.rows]
    assert keys == sorted(keys) and len(keys) == len(set(keys)) == 65
    assert [c.done for c in chunks] == [False] * 9 + [True]
    assert calls[-1] == (f"{db}.pairs", 65, (4, "k12")) and calls[0][1] == 7
    assert view.method == "consistent-snapshot" and view.position.gtid
    middle = read_chunk(cdc, schema, (1, "k05"), 100, upto=(2, "k01"))
    assert [(r[0], r[1]) for r in middle.rows] == [(1, f"k{b:02d}") for b in range(6, 13)] + [
        (2, "k00"), (2, "k01")]
    cdc.close()
