"""examples/clickstream with seed 002's pair: MariaDB ``user_db.user_member`` by CDC into
the Iceberg ``dim_db.user_member`` AND the Hudi ``dim_db.user_member_hudi``, both equal to
MariaDB row for row after the seed's update and a delete; then the one catalog: the
Hudi table beside the Iceberg ones in ``icetide tables``, ``describe``, ``status`` (its
flow and binlog position from its timeline) and ``icetide sql`` on Spark, and refused
by the DuckDB path, which reads Iceberg only.

Its own MariaDB (the example names ``user_db``), ``icetide run --once`` of the two flows
with ``spark.hudi`` on the default catalog, and a Spark session with Hudi reading both
back (tests/integration/cdc/hudi_proc.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icetide.config import load_settings
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from tests.unit.examples.test_clickstream_targets import EXAMPLE

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(1800)]

COLS = ["userid", "name", "show_params", "memberLevel", "update_time"]
PROC = Path(__file__).resolve().parents[1] / "cdc" / "hudi_proc.py"


def _rows(info: MariaDBInfo) -> set[tuple[str | None, ...]]:
    conn = info.connect()
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute("SELECT " + ", ".join(f"CAST(`{c}` AS CHAR)" for c in COLS)
                    + " FROM user_db.user_member")
        found = {tuple(None if v is None else str(v) for v in r) for r in cur.fetchall()}
    conn.close()
    return found


def _cli(env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "icetide.cli", *args], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == code, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _run(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "icetide.cli", "run", str(EXAMPLE), "--once",
         "--flow", "dim_db.user_member", "--flow", "dim_db.user_member_hudi"],
        env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_iceberg_and_the_hudi_member_tables_both_equal_mariadb(tmp_path: Path) -> None:
    with EmbeddedMariaDB(tmp_path / "maria") as info:
        conn = info.connect()
        seed_shop(conn, "user_db")
        conn.close()
        env = {**os.environ, "ICETIDE_HOME": str(tmp_path / "home"),
               "ICETIDE_SPARK__MASTER": "local[2]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
               "ICETIDE_SPARK__HUDI": "true", "CLICKSTREAM_DIMS": "cdc",
               "CLICKSTREAM_HUDI": "true", "SHOP_HOST": info.host, "SHOP_PORT": str(info.port),
               "SHOP_USER": info.cdc_user, "SHOP_PASSWORD": info.cdc_password}
        _run(env)
        conn = info.connect()
        with conn.cursor() as cur:  # the seed's update, and a member leaving
            cur.execute("SELECT userid FROM user_db.user_member ORDER BY userid")
            first, second = (r[0] for r in cur.fetchall()[:2])
            cur.execute("UPDATE user_db.user_member SET memberLevel = 5 WHERE userid = %s",
                        (first,))
            cur.execute("DELETE FROM user_db.user_member WHERE userid = %s", (second,))
        conn.close()
        _run(env)
        expected = _rows(info)
    warehouse = load_settings(None, environ=env).warehouse
    out = tmp_path / "read.json"
    done = subprocess.run(
        [sys.executable, str(PROC), str(out), ",".join(COLS),
         "dim_db.user_member_hudi=lake.dim_db.user_member_hudi|"
         f"{warehouse}/dim_db.db/user_member_hudi|user_member_hudi_rt",
         "iceberg:lake.dim_db.user_member"],
        env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(out.read_text())
    assert len(expected) == 4 and (str(first), "5") in {(r[0], r[3]) for r in expected}
    hudi = found["dim_db.user_member_hudi"]
    assert {tuple(r) for r in hudi["rows"]} == expected
    assert {tuple(r) for r in hudi["by_name"]} == expected
    assert {tuple(r) for r in found["lake.dim_db.user_member"]["rows"]} == expected
    _one_catalog(env, hudi["marker_end"], len(expected))


def _one_catalog(env: dict[str, str], position: dict[str, object], rows: int) -> None:
    """The Hudi table in the CLI's listings, by name, with its flow's position."""
    listed = {t["table"]: t for t in json.loads(_cli(env, "tables", "--format", "json").stdout)}
    assert listed["dim_db.user_member_hudi"]["format"] == "hudi merge_on_read"
    assert listed["dim_db.user_member_hudi"]["snapshots"] >= 2
    assert listed["dim_db.user_member"]["format"] == "iceberg"
    assert "dim_db.user_member_hudi_rt" not in listed  # Hudi's views fold into the table
    info = json.loads(_cli(env, "describe", "dim_db.user_member_hudi", "--format",
                           "json").stdout)
    assert info["format"] == "hudi merge_on_read" and info["identifier_fields"] == ["userid"]
    assert "memberLevel" in {c["name"] for c in info["schema"]}
    assert json.loads(info["snapshots"][0]["summary"]["icetide.pos"]) == position
    status = {r["table"]: r for r in json.loads(
        _cli(env, "status", "--format", "json", "--no-lag").stdout)}
    row = status["dim_db.user_member_hudi"]
    assert row["format"] == "hudi merge_on_read"
    assert row["flows"] == ["dim_db.user_member_hudi"]
    assert row["last_commit_ms"] is not None and row["rows_last_commit"] is not None
    query = "SELECT count(*) AS n FROM spark_catalog.dim_db.user_member_hudi_rt"
    counted = json.loads(_cli(env, "sql", query, "--format", "json").stdout)
    assert counted == [{"n": rows}]
    refused = _cli(env, "sql", "--engine", "duckdb", "SELECT * FROM dim_db.user_member_hudi",
                   code=2)
    assert "reads Iceberg tables only" in refused.stderr
    plain = {**env, "ICETIDE_SPARK__HUDI": "false"}
    refused = _cli(plain, "sql", query, code=2)
    assert "set spark.hudi: true" in refused.stderr
