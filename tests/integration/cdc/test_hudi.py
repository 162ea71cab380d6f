"""CDC into Apache Hudi targets (format="hudi"): MariaDB snapshot + binlog updates and
deletes into a merge-on-read and a copy-on-write table, exactly once, synced to the
catalog service's metastore; their metadata tables without a column-stats index unless a
table property asks for one.

Real everything: the session's MariaDB (binlog), ``icetide run --once`` subprocesses with
``spark.hudi`` on the default catalog (icetide's metastore in a private home), and a Spark
session with the Hudi bundle reading the tables back (hudi_proc.py, its own process: this
process's session is the suite's, without Hudi).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline_helpers import ITEMS_COLS, create_items, mysql_rows, unique, write_pipeline
from tests.e2e.pipeline_proc import kill9
from tests.mariadb_writer import Writer

from icetide.config import load_settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.lake.hudi_timeline import HudiTimeline
from icetide.sources.mysql.schema import quote_table

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(1800)]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.items", primary_key=["id"], format="hudi",
                          table_properties={items_props})
dp.create_streaming_table("{lake_db}.items_cow", primary_key=["id"], format="hudi",
                          table_properties={{"hoodie.table.type": "COPY_ON_WRITE",
                                             "{colstats}": "true"}})
dp.create_auto_cdc_flow(target="{lake_db}.items", source=mysql.binlog("shop", table="{db}.items"),
                        keys=["id"], sequence_by="_pos")
dp.create_auto_cdc_flow(target="{lake_db}.items_cow",
                        source=mysql.binlog("shop", table="{db}.items_cow"),
                        keys=["id"], sequence_by="_pos")
'''
ONE = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.items", primary_key=["id"], format="hudi")
dp.create_auto_cdc_flow(target="{lake_db}.items", source=mysql.binlog("shop", table="{db}.items"),
                        keys=["id"], sequence_by="_pos")
'''
HERE = Path(__file__).parent
COLSTATS = "hoodie.metadata.index.column.stats.enable"
#: Each kill's moment: the run's first Hudi commit (the snapshot's first chunk, and after
#: it the rollback of the half-written one), then its third (after two completed commits).
#: A JVM start each: a kill at the same moment again covers nothing new.
KILL_AT = (1, 3)


def _run(env: dict[str, str], folder: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "icetide.cli", "run", str(folder), "--once"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def _read(env: dict[str, str], tmp: Path, lake_db: str, warehouse: str,
          tables: tuple[tuple[str, str], ...] = (("items", "items_rt"), ("items_cow", "items_cow")),
          ) -> dict[str, Any]:
    out = tmp / f"read-{len(list(tmp.glob('read-*')))}.json"
    targets = [f"{lake_db}.{t}=lake.{lake_db}.{t}|{warehouse}/{lake_db}.db/{t}|{shown}"
               for t, shown in tables]
    done = subprocess.run([sys.executable, str(HERE / "hudi_proc.py"), str(out),
                           ",".join(ITEMS_COLS), *targets],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def _change(info: MariaDBInfo, table: str) -> None:
    """Updates (one twice), deletes (one of a row updated first) and inserts."""
    conn = info.connect()
    with conn.cursor() as cur:
        t = quote_table(table)
        cur.execute(f"UPDATE {t} SET qty = qty + 100, note = 'updated' WHERE id % 5 = 0")
        cur.execute(f"UPDATE {t} SET qty = -1 WHERE id = 10")
        cur.execute(f"UPDATE {t} SET name = 'gone soon' WHERE id = 7")
        cur.execute(f"DELETE FROM {t} WHERE id IN (3, 7, 44)")
        cur.execute(f"INSERT INTO {t} VALUES (1001, 'new', 1, 2.5, NOW(), NULL)")
    conn.close()


def _as_sets(found: dict[str, Any]) -> dict[str, set[tuple[Any, ...]]]:
    return {"rows": {tuple(r) for r in found["rows"]},
            "by_name": {tuple(r) for r in found["by_name"]}}


def test_cdc_into_hudi_mor_and_cow_equals_mariadb_exactly_once(
        tmp_path: Path, mariadb: MariaDBInfo) -> None:
    db, lake_db = unique("hu"), unique("hudim")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn.close()
    items = create_items(mariadb, db, 120)
    cow = f"{db}.items_cow"
    create_items_cow(mariadb, items, cow)
    def pipeline(items_props: str) -> Path:
        flows = FLOWS.format(db=db, lake_db=lake_db, items_props=items_props, colstats=COLSTATS)
        return write_pipeline(tmp_path / "p", mariadb, lake_db, flows, chunk_size=50,
                              max_records=50)

    folder = pipeline(f'{{"{COLSTATS}": "true"}}')  # the index as Hudi builds it by default
    home = tmp_path / "home"
    env = {**os.environ, "ICETIDE_HOME": str(home), "ICETIDE_SPARK__MASTER": "local[2]",
           "ICETIDE_SPARK__DRIVER_MEMORY": "1g", "ICETIDE_SPARK__HUDI": "true"}
    warehouse = load_settings(None, environ=env).warehouse

    _run(env, folder)  # the snapshot in 50-row batches, then the binlog
    assert _index_partitions(warehouse, lake_db, "items") == {"column_stats", "files"}
    folder = pipeline("{}")  # icetide's default: no column-stats index
    _change(mariadb, items)
    _change(mariadb, cow)
    _run(env, folder)
    # dropped from the table that had it at its next commit; kept where a property asks
    assert _index_partitions(warehouse, lake_db, "items") == {"files"}
    assert _index_partitions(warehouse, lake_db, "items_cow") == {"column_stats", "files"}
    first = _read(env, tmp_path, lake_db, warehouse)
    for flow, table in ((f"{lake_db}.items", items), (f"{lake_db}.items_cow", cow)):
        expected = mysql_rows(mariadb, table, ITEMS_COLS)
        assert len(expected) == 118
        got = _as_sets(first[flow])
        assert got["rows"] == expected
        assert got["by_name"] == expected  # synced to the metastore, read by name
        assert first[flow]["marker_end"][next(iter(first[flow]["marker_end"]))]["phase"] == (
            "binlog")
    mor, cow_found = first[f"{lake_db}.items"], first[f"{lake_db}.items_cow"]
    assert {c.split(":")[1] for c in mor["commits"]} == {"deltacommit"}
    assert {c.split(":")[1] for c in cow_found["commits"]} == {"commit"}
    assert {"items_ro", "items_rt", "items_cow"} <= set(mor["tables"])
    assert len(mor["commits"]) >= 4  # 3 snapshot batches at least, then the binlog

    _run(env, folder)  # a replay from the committed positions: nothing new, nothing twice
    again = _read(env, tmp_path, lake_db, warehouse)
    for flow in first:
        assert again[flow]["commits"] == first[flow]["commits"]
        assert again[flow]["marker_end"] == first[flow]["marker_end"]
        assert _as_sets(again[flow]) == _as_sets(first[flow])


def _index_partitions(warehouse: str, lake_db: str, table: str) -> set[str]:
    """The partitions of a Hudi table's metadata table, as its hoodie.properties lists them."""
    props = HudiTimeline(f"{warehouse}/{lake_db}.db/{table}").properties
    return set(filter(None, props["hoodie.table.metadata.partitions"].split(",")))


def create_items_cow(info: MariaDBInfo, items: str, cow: str) -> None:
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {quote_table(cow)} LIKE {quote_table(items)}")
        cur.execute(f"INSERT INTO {quote_table(cow)} SELECT * FROM {quote_table(items)}")
    conn.close()


def _pending(timeline: Path) -> set[str]:
    """Delta commits of the table in flight (inflight, not completed)."""
    if not timeline.is_dir():
        return set()
    names = [p.name for p in timeline.iterdir()]
    done = {n.split("_", 1)[0] for n in names if "_" in n.split(".", 1)[0]}
    return {n.split(".", 1)[0] for n in names if n.endswith(".deltacommit.inflight")} - done


def _started(timeline: Path) -> set[str]:
    """Delta commits of the table ever started (in flight or completed)."""
    if not timeline.is_dir():
        return set()
    return {p.name.split(".", 1)[0].split("_", 1)[0] for p in timeline.iterdir()
            if ".deltacommit" in p.name}


def _kill_in_flight(env: dict[str, str], folder: Path, log: Path, timeline: Path,
                    nth: int) -> str:
    """Start a run, SIGKILL it while the ``nth`` Hudi commit it started is in flight (the
    ones before it completed); that instant."""
    before = _started(timeline)
    cmd = [sys.executable, "-m", "icetide.cli", "-v", "run", str(folder),
           "--trigger-interval", "1"]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 600
    try:
        while not (len(new := _started(timeline) - before) >= nth
                   and (found := _pending(timeline) & new)):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no Hudi commit number {nth} started"
            time.sleep(0.05)
    finally:
        kill9(proc)
    return sorted(found)[0]


def test_kill9_during_hudi_commits_loses_and_repeats_nothing(
        tmp_path: Path, mariadb: MariaDBInfo) -> None:
    db, lake_db = unique("hk"), unique("hudik")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn.close()
    items = create_items(mariadb, db, 400)
    folder = write_pipeline(tmp_path / "p", mariadb, lake_db, ONE.format(db=db, lake_db=lake_db),
                            chunk_size=50, max_records=50, trigger="1s")
    env = {**os.environ, "ICETIDE_HOME": str(tmp_path / "home"),
           "ICETIDE_SPARK__MASTER": "local[2]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
           "ICETIDE_SPARK__HUDI": "true"}
    warehouse = load_settings(None, environ=env).warehouse
    timeline = Path(warehouse) / f"{lake_db}.db" / "items" / ".hoodie" / "timeline"
    writer = Writer(mariadb, items, 400, seed=5, pause=0.05)
    writer.start()
    try:
        killed = [_kill_in_flight(env, folder, tmp_path / f"run-{n}.log", timeline, nth)
                  for n, nth in enumerate(KILL_AT)]
    finally:
        writer.stop()
    _run(env, folder)
    found = _read(env, tmp_path, lake_db, warehouse, (("items", "items_rt"),))[f"{lake_db}.items"]
    assert {tuple(r) for r in found["rows"]} == mysql_rows(mariadb, items, ITEMS_COLS)
    assert writer.ops > 10
    completed = {c.split(":")[0] for c in found["commits"]}
    assert not completed & set(killed)  # every half-written commit was never completed...
    assert found["rollbacks"] >= 1  # ...but rolled back by Hudi
    chain = found["chain"]
    for before, after in itertools.pairwise(chain):
        assert after[0] == before[1]  # each batch starts where the last ended: none twice
    assert found["marker_end"] == chain[-1][1]


INCLUDE = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("{lake_db}.items", primary_key=["id"], format="hudi")
dp.create_auto_cdc_flow(target="{lake_db}.items",
                        source=mysql.binlog("shop", include=[r"{db}\\..*"], into="{lake_db}"),
                        keys=["id"], sequence_by="_pos")
'''


def test_a_hudi_target_without_hudi_or_from_many_tables_is_refused(
        tmp_path: Path, mariadb: MariaDBInfo) -> None:
    db, lake_db = unique("hr"), unique("hudir")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn.close()
    create_items(mariadb, db, 3)
    base = {"ICETIDE_HOME": str(tmp_path / "home"), "ICETIDE_SPARK__MASTER": "local[1]",
            "ICETIDE_SPARK__DRIVER_MEMORY": "1g"}
    cases = [(ONE, {"ICETIDE_SPARK__HUDI": "false"}, r"has no Hudi: set spark.hudi: true"),
             (INCLUDE, {"ICETIDE_SPARK__HUDI": "true"},
              r"feeds from one MySQL table so far: write mysql.binlog\('<source>', "
              r"table='db.table'\)")]
    for n, (flows, extra, message) in enumerate(cases):
        folder = write_pipeline(tmp_path / f"p{n}", mariadb, lake_db,
                                flows.format(db=db, lake_db=lake_db))
        done = subprocess.run([sys.executable, "-m", "icetide.cli", "run", str(folder), "--once"],
                              env={**os.environ, **base, **extra}, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
        assert re.search(message, done.stderr), done.stderr[-2000:]
