"""A downstream flow streams a Hudi table (``dp.read_stream``) as it streams an Iceberg
primary-key table's changelog: MariaDB → Hudi merge-on-read target → an append table
logging the ``+I/-U/+U/-D`` rows, inserts, updates (a DECIMAL column among them) and
deletes included, each change exactly once across runs; folding the log gives MariaDB.

Real everything: the session's MariaDB (binlog) and ``icetide run --once`` subprocesses
with ``spark.hudi`` on the default catalog; the log is read back by name with pyiceberg
through the home's metastore."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from cdc_pipeline_helpers import create_items, mysql_rows, unique, write_pipeline

from icetide.config import load_settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.runtime.catalogs import pyiceberg_catalog
from icetide.sources.mysql.schema import quote_table

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(1800)]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.items", primary_key=["id"], format="hudi")
dp.create_auto_cdc_flow(target="{lake_db}.items", source=mysql.binlog("shop", table="{db}.items"),
                        keys=["id"], sequence_by="_pos")


@dp.table(name="{lake_db}.items_log")
def items_log():
    return dp.read_stream("{lake_db}.items").select(
        "id", "name", "qty", "price", "_op", "_seq", "_commit_ts")
'''
COLS = ["id", "name", "qty", "price", "_op", "_seq"]


def _run(env: dict[str, str], folder: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "icetide.cli", "run", str(folder), "--once"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _log(env: dict[str, str], lake_db: str) -> list[tuple[str | None, ...]]:
    """The consumer's log, an Iceberg table, read by name through the home's metastore with
    pyiceberg (no JVM start): its rows as text, the form :func:`mysql_rows` gives."""
    catalog = pyiceberg_catalog(load_settings(None, environ=env))
    arrow = catalog.load_table((lake_db, "items_log")).scan(selected_fields=tuple(COLS)).to_arrow()
    columns = [arrow.column(c).to_pylist() for c in COLS]
    return [tuple(map(_text, row)) for row in zip(*columns, strict=True)]


def _text(value: object) -> str | None:
    """A value as MariaDB's ``CAST(… AS CHAR)`` gives it (a DECIMAL in full: ``0.0000``)."""
    if value is None:
        return None
    return format(value, "f") if isinstance(value, Decimal) else str(value)


def _fold(log: list[tuple[str | None, ...]]) -> set[tuple[str | None, ...]]:
    """The rows a consumer of the log holds after applying it in ``_seq`` order."""
    state: dict[str | None, tuple[str | None, ...]] = {}
    for row in sorted(log, key=lambda r: int(str(r[5]))):
        if row[4] in ("+I", "+U"):
            state[row[0]] = row[:4]
        elif row[4] == "-D":
            state.pop(row[0], None)
    return set(state.values())


def test_a_flow_streams_a_hudi_table_with_its_updates_and_deletes_exactly_once(
        tmp_path: Path, mariadb: MariaDBInfo) -> None:
    db, lake_db = unique("hd"), unique("hudid")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn.close()
    items = create_items(mariadb, db, 30)
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db,
                            FLOWS.format(db=db, lake_db=lake_db), chunk_size=50, max_records=50)
    env = {**os.environ, "ICETIDE_HOME": str(tmp_path / "home"),
           "ICETIDE_SPARK__MASTER": "local[2]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
           "ICETIDE_SPARK__HUDI": "true"}
    _run(env, folder)
    first = _log(env, lake_db)
    assert sorted(r[4] for r in first) == ["+I"] * 30
    conn = mariadb.connect()
    with conn.cursor() as cur:
        t = quote_table(items)
        cur.execute(f"UPDATE {t} SET qty = qty + 100, price = price + 1 WHERE id IN (1, 2)")
        cur.execute(f"UPDATE {t} SET name = 'twice' WHERE id = 2")
        cur.execute(f"DELETE FROM {t} WHERE id IN (3, 4)")
        cur.execute(f"INSERT INTO {t} VALUES (31, 'new', 1, 2.5000, NOW(), NULL)")
    conn.close()
    _run(env, folder)
    _run(env, folder)  # nothing new: nothing logged twice
    log = _log(env, lake_db)
    later = [r for r in log if r not in first]
    ops = sorted((r[0], r[4]) for r in later)
    assert ops == [("1", "+U"), ("1", "-U"), ("2", "+U"), ("2", "-U"), ("3", "-D"),
                   ("31", "+I"), ("4", "-D")]
    after = {r[0]: r for r in later if r[4] == "+U"}
    assert after["2"][1] == "twice" and after["1"][3] == "1.1429"  # net change, typed
    assert len(log) == len(set(log)) == 37
    expected = {r[:4] for r in mysql_rows(mariadb, items, ["id", "name", "qty", "price"])}
    assert _fold(log) == expected
