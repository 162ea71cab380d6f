"""Many PyHive sessions query through ``Context.serve_sql`` while a pipeline commits."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

import pytest
from pyhive import hive
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.config import Settings
from icetide.devkit.embedded.process import free_port
from icetide.flows.loop import BatchResult

pytestmark = pytest.mark.spark

SESSIONS = 10
QUERIES = 50

FLOWS = '''
from pyspark.sql import functions as F
from icetide import pipelines as dp

@dp.table(name="srv_live.events")
def events():
    return dp.read_stream("srv_live.raw").withColumn("n2", F.col("n") * 2)
'''


def _pipeline(spark: SparkSession, tmp_path: Path) -> Path:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.srv_live")
    spark.sql("DROP TABLE IF EXISTS lake.srv_live.raw")
    spark.sql("DROP TABLE IF EXISTS lake.srv_live.events")
    spark.sql("CREATE TABLE lake.srv_live.raw (n bigint) USING iceberg")
    spark.sql("INSERT INTO lake.srv_live.raw SELECT id FROM range(10)")
    folder = tmp_path / "live"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text("name: live\ncatalog: lake\n")
    (folder / "flows.py").write_text(FLOWS)
    return folder


class _Client(threading.Thread):
    """One HiveServer2 session running ``QUERIES`` queries; records counts and latencies."""

    def __init__(self, port: int, index: int) -> None:
        super().__init__(name=f"pyhive-{index}", daemon=True)
        self.port, self.index = port, index
        self.counts: list[int] = []
        self.latencies: list[float] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = hive.connect(host="127.0.0.1", port=self.port, username=f"user{self.index}")
            cursor = conn.cursor()
            for i in range(QUERIES):
                started = time.perf_counter()
                if i % 5 == 4:
                    cursor.execute("SELECT n % 3 AS k, count(*), sum(n2) FROM srv_live.events "
                                   "GROUP BY n % 3")
                    cursor.fetchall()
                else:
                    cursor.execute("SELECT count(*) FROM srv_live.events")
                    self.counts.append(cursor.fetchall()[0][0])
                self.latencies.append(time.perf_counter() - started)
            conn.close()
        except BaseException as exc:
            self.error = exc


def test_ten_sessions_query_while_a_pipeline_commits(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    folder = _pipeline(spark, tmp_path)
    ctx = Context(icetide_settings, folder)
    ctx.run(once=True)  # the target exists before the first client asks for it
    stop = threading.Event()
    commits: list[BatchResult] = []
    pipeline = threading.Thread(target=ctx.run, kwargs={
        "stop": stop, "trigger_interval": 0.5, "on_batch": commits.append}, daemon=True)

    def feed() -> None:
        n = 10
        while not stop.wait(0.5):
            spark.sql(f"INSERT INTO lake.srv_live.raw SELECT id FROM range({n}, {n + 10})")
            n += 10

    feeder = threading.Thread(target=feed, daemon=True)
    with ctx.serve_sql(port=free_port()) as server:
        pipeline.start()
        feeder.start()
        started = time.perf_counter()
        clients = [_Client(server.port, i) for i in range(SESSIONS)]
        for client in clients:
            client.start()
        for client in clients:
            client.join(600)
        seconds = time.perf_counter() - started
        committed_meanwhile = len(commits)
        stop.set()
        pipeline.join(60)
        feeder.join(60)

    assert [c.error for c in clients] == [None] * SESSIONS
    latencies = sorted(x for c in clients for x in c.latencies)
    assert len(latencies) == SESSIONS * QUERIES
    for client in clients:  # each session sees the table only grow
        assert client.counts == sorted(client.counts)
    assert committed_meanwhile >= 2, "the pipeline did not commit while clients queried"
    assert max(c.counts[-1] for c in clients) > min(c.counts[0] for c in clients)
    print(f"\n{SESSIONS} sessions x {QUERIES} queries in {seconds:.1f}s "
          f"({len(latencies) / seconds:.1f} queries/s) while {committed_meanwhile} batches "
          f"committed; latency p50 {statistics.median(latencies) * 1000:.0f} ms, "
          f"p95 {latencies[int(len(latencies) * 0.95)] * 1000:.0f} ms, "
          f"max {latencies[-1] * 1000:.0f} ms")
