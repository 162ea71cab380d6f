"""Exactly-once under kill -9: the seed's clickevent flow, real broker, real Spark, real Iceberg.

While events (2 % malformed) are being produced, `icetide run examples/clickstream` is
killed with SIGKILL (its whole process group, JVM included) at random moments at least
five times and restarted. Afterwards the target and the dead-letter table hold exactly
the produced offsets: none lost, none twice, every bad event in the DLQ.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.embedded.broker import EmbeddedBroker
from icetide.gen.clicks import GenOptions, GenReport, produce_clicks
from icetide.gen.seed_dims import load_seed_dimensions

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "examples" / "clickstream"
KILLS = 6


@pytest.fixture()
def lake(tmp_path: Path, spark: SparkSession) -> Iterator[tuple[Path, str]]:
    """A private ICETIDE_HOME whose hadoop warehouse the test session reads as catalog `e2e`."""
    home = tmp_path / "home"
    warehouse = home / "warehouse"
    spark.conf.set("spark.sql.catalog.e2e", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.e2e.type", "hadoop")
    spark.conf.set("spark.sql.catalog.e2e.warehouse", str(warehouse))
    spark.conf.set("spark.sql.catalog.e2e.cache-enabled", "false")
    yield home, "e2e"


def _env(home: Path, bootstrap: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ICETIDE_HOME": str(home),
        "ICETIDE_KAFKA__BOOTSTRAP": bootstrap,
        "ICETIDE_SPARK__MASTER": "local[2]",
        "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
        "ICETIDE_KAFKA__MAX_RECORDS_PER_TRIGGER": "4000",
    })
    return env


def _start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "icetide.cli", "run", str(PIPELINE), *args]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _wait_running(proc: subprocess.Popen[bytes], log: Path, timeout: float = 300) -> None:
    """Until this run has committed its first batch (Spark up, flow discovered, running)."""
    deadline = time.monotonic() + timeout
    while b"clickevent: +" not in (log.read_bytes() if log.exists() else b""):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "pipeline did not start"
        time.sleep(0.2)


def _kill9(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def _commits(spark: SparkSession, table: str) -> int:
    if not spark.catalog.tableExists(table):
        return 0
    return int(spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0])


def test_kill9_loses_and_duplicates_nothing(
        tmp_path: Path, spark: SparkSession, lake: tuple[Path, str]) -> None:
    home, cat = lake
    rng = random.Random(20261122)
    load_seed_dimensions(spark, cat)
    with EmbeddedBroker(None, tmp_path / "broker") as broker:
        env = _env(home, broker.bootstrap)
        report: list[GenReport] = []
        gen = threading.Thread(target=lambda: report.append(produce_clicks(
            broker.bootstrap, "clicktopic",
            GenOptions(count=60_000, rate=1000, bad_ratio=0.02, seed=7))))
        gen.start()
        kills = 0
        while kills < KILLS or gen.is_alive():
            cycle_log = tmp_path / f"run-{kills}.log"
            proc = _start(env, cycle_log, "--trigger-interval", "1")
            _wait_running(proc, cycle_log)
            time.sleep(rng.uniform(0.0, 6.0))  # anywhere in planning, reading or committing
            _kill9(proc)
            kills += 1
            assert kills < 40
        gen.join()
        target = f"{cat}.ods_behavior.clickevent"
        during_kills = _commits(spark, target)
        drain_env = {k: v for k, v in env.items()
                     if k != "ICETIDE_KAFKA__MAX_RECORDS_PER_TRIGGER"}
        _drain(drain_env)
        assert during_kills >= KILLS, "too few commits happened between the kills"
        _check(spark, cat, report[0], kills)


def _drain(env: dict[str, str], attempts: int = 3) -> None:
    """``--once`` until it exits 0; a crashed drain is just one more restart to survive."""
    outputs = []
    for _ in range(attempts):
        final = subprocess.run(
            [sys.executable, "-m", "icetide.cli", "run", str(PIPELINE), "--once"],
            env=env, capture_output=True, text=True, timeout=900)
        if final.returncode == 0:
            return
        outputs.append(final.stdout[-2000:] + final.stderr[-4000:])
    raise AssertionError("the final --once drain failed:\n" + "\n---\n".join(outputs))


def _check(spark: SparkSession, cat: str, report: GenReport, kills: int) -> None:
    target, dlq = f"{cat}.ods_behavior.clickevent", f"{cat}.ods_behavior.clickevent_dlq"
    assert kills >= 5
    rows = spark.sql(
        f"SELECT _kafka_partition p, _kafka_offset o FROM {target} "
        f"UNION ALL SELECT `partition` p, `offset` o FROM {dlq}").collect()
    seen = [(r.p, r.o) for r in rows]
    produced = report.valid + report.malformed
    assert report.delivery_errors == 0
    assert len(seen) == len(set(seen)), "duplicated offsets"
    assert len(seen) == produced, f"{produced - len(seen)} events lost"
    by_part: dict[int, list[int]] = {}
    for p, o in seen:
        by_part.setdefault(p, []).append(o)
    for offsets in by_part.values():  # contiguous from 0: nothing skipped
        assert sorted(offsets) == list(range(len(offsets)))
    assert spark.table(dlq).count() == report.malformed
    assert spark.table(target).count() == report.valid
    joined = spark.sql(f"SELECT count(*) FROM {target} WHERE productId = '1' AND name = 'test01'")
    assert joined.collect()[0][0] > 0  # enrichment with dim_db.products happened
