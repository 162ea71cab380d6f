"""Two `icetide run` processes of the same flow on one lake never commit a range twice.

A continuous run holds its flows; a `--once` run of the same flow started meanwhile stops
at once with "already running" (exit 2) and commits nothing; after the first run stops
and a final `--once` drains the rest, every Kafka offset lands exactly once. For the
embedded Hadoop catalog (on Apache Kafka) and a jdbc catalog on PostgreSQL (on tansu).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg2
import pytest

from icetide.devkit.embedded.postgres import EmbeddedPostgres
from icetide.devkit.gen.clicks import GenOptions, produce_clicks

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]

FLOW = '''
from icetide import pipelines as dp
from icetide.sources import kafka

@dp.table(name="race.clicks")
def clicks():
    return kafka.read("clicks", schema="uid string, productId string, updateTime bigint",
                      dead_letter="race.clicks_dlq")
'''


def _pipeline(folder: Path, topic: str) -> Path:
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(
        f"name: race\ncatalog: lake\ndatabase: race\nsources:\n"
        f"  clicks: {{type: kafka, topic: {topic}}}\n")
    (folder / "flows.py").write_text(FLOW)
    return folder


def _env(home: Path, broker: str, catalog: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "ICETIDE_HOME": str(home), "ICETIDE_KAFKA__BOOTSTRAP": broker,
           "ICETIDE_SPARK__MASTER": "local[1]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
           "ICETIDE_SPARK__SHUFFLE_PARTITIONS": "1",
           "ICETIDE_KAFKA__MAX_RECORDS_PER_TRIGGER": "300"}
    env.update(catalog)
    return env


def _run(pipeline: Path, env: dict[str, str], log: Path, *args: str
         ) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "icetide.cli", "run", str(pipeline), *args],
            env=env, stdout=out, stderr=subprocess.STDOUT)


# Each catalog once and each broker once: the catalog holds the run's lock and markers, the
# broker the offsets; neither depends on the other (a full cross would be a third JVM run)
@pytest.mark.parametrize(("catalog", "broker"), [("jdbc", "tansu"), ("hadoop", "kafka")],
                         indirect=["broker"])
def test_second_run_of_a_running_flow_stops_and_nothing_is_duplicated(
        catalog: str, broker: str, kafka_topic: Callable[..., str],
        postgres: EmbeddedPostgres, tmp_path: Path) -> None:
    topic = kafka_topic(partitions=2)
    produce_clicks(broker, topic, GenOptions(count=6000, bad_ratio=0.05, seed=5))
    pipeline = _pipeline(tmp_path / "pipeline", topic)
    cat = {"ICETIDE_CATALOG__TYPE": catalog}
    if catalog == "jdbc":
        db = f"race_{os.getpid()}"
        conn = psycopg2.connect(postgres.dsn())
        conn.autocommit = True
        conn.cursor().execute(f'CREATE DATABASE "{db}"')
        conn.close()
        cat.update({"ICETIDE_CATALOG__URI": postgres.jdbc_url.rsplit("/", 1)[0] + "/" + db,
                    "ICETIDE_CATALOG__USER": postgres.user})
    env = _env(tmp_path / "home", broker, cat)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = _run(pipeline, env, first_log, "--trigger-interval", "1")
    deadline = time.monotonic() + 300
    while b" rows, " not in first_log.read_bytes():  # its first batch is committed
        assert first.poll() is None, first_log.read_text()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    second = _run(pipeline, env, second_log, "--once")
    assert second.wait(300) == 2, second_log.read_text()[-3000:]
    assert "already running" in second_log.read_text()
    assert " rows, " not in second_log.read_text()
    first.terminate()  # SIGTERM: stops after the current batch
    assert first.wait(120) == 0, first_log.read_text()[-3000:]
    # what is left in one batch (its first run's small batches were what the race needed)
    drain = _run(pipeline, {**env, "ICETIDE_KAFKA__MAX_RECORDS_PER_TRIGGER": "10000"},
                 tmp_path / "drain.log", "--once")
    assert drain.wait(300) == 0, (tmp_path / "drain.log").read_text()[-3000:]

    check = subprocess.run(
        [sys.executable, "-m", "icetide.cli", "sql", "--engine", "duckdb", "--format", "json",
         "SELECT (SELECT count(*) FROM race.clicks) AS n, "
         "(SELECT count(DISTINCT (_kafka_partition, _kafka_offset)) FROM race.clicks) AS d, "
         "(SELECT count(*) FROM race.clicks_dlq) AS bad"],
        env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-2000:]
    [counts] = json.loads(check.stdout)
    assert counts["n"] == counts["d"] and counts["n"] + counts["bad"] == 6000, counts
