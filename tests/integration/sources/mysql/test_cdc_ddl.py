"""DDL in the binlog: ADD / RENAME / MODIFY / DROP COLUMN become evolution actions in a batch of
their own; unsupported changes stop the source with SchemaChangeError."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from mysql_cdc_helpers import Model, create_items, drain, new_database

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.errors import SchemaChangeError
from icetide.model.source import BatchRange, Position
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig

pytestmark = pytest.mark.mariadb


def execute(info: MariaDBInfo, db: str, *statements: str) -> None:
    conn = info.connect(database=db)
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
    conn.close()


def started(info: MariaDBInfo, db: str, **config: Any) -> tuple[MySqlSource, Position]:
    source = MySqlSource(MySqlSourceConfig(
        name=db, connection=info.connect_args("cdc"), include=(rf"{db}\..*",), **config))
    models: dict[str, Model] = {}
    return source, drain(source, source.initial_position(), models)


def next_batch(source: MySqlSource, pos: Position) -> BatchRange:
    batch = source.plan(pos)
    assert batch is not None
    return batch


LAGGING = (  # all run before the source reads any of them
    "INSERT INTO items (id, name, qty) VALUES (10, 'before', 1)",
    "ALTER TABLE items ADD COLUMN color VARCHAR(10) NULL",
    "INSERT INTO items (id, name, qty, color) VALUES (11, 'after', 2, 'red')",
    "ALTER TABLE items RENAME COLUMN qty TO quantity",
    "ALTER TABLE items MODIFY quantity BIGINT, MODIFY name VARCHAR(80) NOT NULL",
    "ALTER TABLE items DROP COLUMN note",
    "UPDATE items SET quantity = 5000000000 WHERE id = 11",
)


def test_column_ddl_becomes_evolution_actions(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 3)
    source, pos = started(mariadb, db)
    execute(mariadb, db, *LAGGING)

    first = next_batch(source, pos)  # rows in the old shape, up to the first new-shape row
    assert first.records == 1 and "schema_changes" not in first.info
    assert [r[1] for r in source.rows(first)[table]] == ["before"]
    assert [d["query"] for d in first.info["ddl"]] == [
        "ALTER TABLE items ADD COLUMN color VARCHAR(10) NULL"]

    add = next_batch(source, first.end)  # the change alone, before the rows that need it
    assert add.records == 0 and add.end == first.end and source.rows(add) == {}
    assert add.info["schema_changes"] == {table: [
        {"name": "color", "spark_type": "string", "op": "add"}]}
    assert source.plan_to(add.start, add.end).records == 0  # re-planning it is empty

    row = next_batch(source, add.end)
    (values,) = source.rows(row)[table]
    assert values[:2] == (11, "after") and values[6:8] == ("red", "c")  # new column in order
    assert len(row.info["ddl"]) == 3

    # rename + widen + drop arrive together: the reader lagged behind three DDL statements
    evolve = next_batch(source, row.end)
    assert evolve.records == 0
    assert evolve.info["schema_changes"][table] == [
        {"old": "qty", "new": "quantity", "op": "rename"},
        {"name": "quantity", "old_type": "int", "new_type": "bigint", "op": "widen"},
        {"name": "note", "policy": "keep", "op": "drop"}]
    update = next_batch(source, evolve.end)
    (values,) = source.rows(update)[table]
    assert source.schema(table).names == ("id", "name", "quantity", "price", "updated", "color")
    assert values[2] == 5_000_000_000 and values[6] == "u"
    assert source.plan(update.end) is None
    source.close()


def test_one_ddl_at_a_time_in_a_caught_up_reader(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 3)
    source, pos = started(mariadb, db)
    steps = [
        ("ALTER TABLE items MODIFY price DECIMAL(14,4)",
         [{"name": "price", "old_type": "decimal(10,4)", "new_type": "decimal(14,4)",
           "op": "widen"}]),
        ("ALTER TABLE items MODIFY note VARCHAR(20)", []),  # text → varchar: still a string
        ("ALTER TABLE items CHANGE qty amount INT", [{"old": "qty", "new": "amount",
                                                     "op": "rename"}]),
        ("ALTER TABLE items MODIFY name VARCHAR(40) NULL", [{"name": "name", "op": "nullable"}]),
    ]
    for i, (ddl, expected) in enumerate(steps):
        execute(mariadb, db, ddl, f"UPDATE items SET price = {i} WHERE id = 1")
        batch = next_batch(source, pos)
        if expected:
            assert batch.info["schema_changes"] == {table: expected}, ddl
            batch = next_batch(source, batch.end)
        assert batch.records == 1, ddl
        pos = batch.end
    assert source.schema(table).names == ("id", "name", "amount", "price", "updated", "note")
    source.close()


def test_unsupported_changes_stop_with_the_remedy(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 3)
    source, pos = started(mariadb, db)
    execute(mariadb, db, "ALTER TABLE items MODIFY qty SMALLINT",  # still an int: fine
            "UPDATE items SET qty = 7 WHERE id = 1")
    batch = next_batch(source, pos)
    assert batch.records == 1 and "schema_changes" not in batch.info
    execute(mariadb, db, "ALTER TABLE items MODIFY qty VARCHAR(10)",
            "UPDATE items SET qty = 'seven' WHERE id = 1")
    for _ in range(2):  # the flow stays stopped there
        with pytest.raises(SchemaChangeError, match=rf"{table}.qty changed from int to string"
                                                    rf".*icetide cdc resnapshot {table}"):
            source.plan(batch.end)
    source.close()

    other = create_items(mariadb, db, 3, table="other")
    source, pos = started(mariadb, db)
    execute(mariadb, db, "TRUNCATE TABLE other")
    with pytest.raises(SchemaChangeError, match=rf"TRUNCATE of followed table {other}"):
        source.plan(pos)
    source.close()


def test_drop_policy_fail_and_tables_created_later(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    create_items(mariadb, db, 2)
    source, pos = started(mariadb, db, drop_policy="fail")
    execute(mariadb, db, "CREATE TABLE fresh (k VARCHAR(5) PRIMARY KEY, v DATETIME(6))",
            "INSERT INTO fresh VALUES ('a', '2024-05-06 07:08:09.123456')")
    rows = next_batch(source, pos)  # create the target first, then apply the rows
    (action,) = rows.info["schema_changes"][f"{db}.fresh"]
    assert action["op"] == "create"
    assert action["schema"]["primary_key"] == ["k"]
    (row,) = source.rows(rows)[f"{db}.fresh"]
    assert row[:2] == ("a", dt.datetime(2024, 5, 6, 7, 8, 9, 123456))
    assert f"{db}.fresh" in source.tables
    execute(mariadb, db, "ALTER TABLE items DROP COLUMN note",
            "UPDATE items SET qty = 3 WHERE id = 1")
    with pytest.raises(SchemaChangeError, match="note was dropped upstream"):
        source.plan(rows.end)
    source.close()
    source, pos = started(mariadb, db)
    execute(mariadb, db, "CREATE OR REPLACE TABLE fresh (k INT PRIMARY KEY)")
    with pytest.raises(SchemaChangeError, match=rf"CREATE of followed table {db}.fresh"):
        next_batch(source, pos)
    source.close()


def test_a_restart_behind_ddl_reads_rows_in_their_own_shape(mariadb: MariaDBInfo) -> None:
    db = new_database(mariadb)
    table = create_items(mariadb, db, 3)
    source, pos = started(mariadb, db)
    source.close()
    execute(mariadb, db, *LAGGING)
    restarted = MySqlSource(MySqlSourceConfig(
        name=db, connection=mariadb.connect_args("cdc"), include=(rf"{db}\..*",)))
    first = next_batch(restarted, pos)
    assert first.info["adopted"] == [table]
    old = ("id", "name", "qty", "price", "updated", "note")
    assert restarted.batch_schemas(first)[table].names == old  # as the rows were written
    assert restarted.schemas.baseline(table).names == (  # information_schema is ahead
        "id", "name", "quantity", "price", "updated", "color")
    assert [r[:3] for r in restarted.rows(first)[table]] == [(10, "before", 1)]
    add = next_batch(restarted, first.end)
    assert add.info["schema_changes"][table] == [
        {"name": "color", "spark_type": "string", "op": "add"}]
    restarted.close()
