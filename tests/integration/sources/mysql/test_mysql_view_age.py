"""A mysql source's ``max_view_age`` (docs/options.md): a snapshot read in several
batches keeps its consistent view while it is younger than that, and opens a new one
(at the binlog's position then) once it is older — visible in the view sequence the
snapshot rows are stamped with (``_pos``)."""

from __future__ import annotations

import time

import pytest
from mysql_cdc_helpers import create_items, new_database

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.sources.mysql.declared import MySqlDeclaration
from icetide.sources.registry import build_source

pytestmark = pytest.mark.mariadb


def _stamps(info: MariaDBInfo, db: str, table: str, monkeypatch: pytest.MonkeyPatch,
            **age: float) -> list[set[object]]:
    """The ``_pos`` stamps of two snapshot batches, the binlog moved on between them."""
    monkeypatch.setenv("VIEW_AGE_PW", info.cdc_password)
    declared = build_source("shop", {"type": "mysql", "host": info.host, "port": info.port,
                                     "user": info.cdc_user, "password_env": "VIEW_AGE_PW",
                                     "chunk_size": 2, **age}, Settings())
    assert isinstance(declared, MySqlDeclaration)
    source = declared.follow(table, (rf"{db}\.items",), ())
    try:
        pos, stamps = source.initial_position(), []
        width = len(source.schema(table).columns)
        for _ in range(2):
            batch = source.plan(pos, 2)
            assert batch is not None
            stamps.append({row[width + 1] for row in source.rows(batch)[table]})
            pos = batch.end
            conn = info.connect()
            with conn.cursor() as cur:  # the binlog moves on
                cur.execute(f"INSERT INTO `{db}`.other VALUES ()")
            conn.close()
            time.sleep(0.6)
        return stamps
    finally:
        declared.close()


def test_an_old_snapshot_view_is_replaced(
        mariadb: MariaDBInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 6)
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.other (id INT AUTO_INCREMENT PRIMARY KEY)")
    conn.close()
    first, second = _stamps(mariadb, db, table, monkeypatch)  # default: 600 s
    assert len(first) == 1 and first == second  # one view for both batches
    first, second = _stamps(mariadb, db, table, monkeypatch, max_view_age=0.5)
    assert len(first) == len(second) == 1 and first != second  # a newer view
