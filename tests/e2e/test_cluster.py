"""The whole pipeline on a real Spark standalone cluster, with faults.

One cluster for the module (``EmbeddedSparkCluster``: a master and two workers on
loopback, started from the pyspark wheel's ``spark-class``; each executor its own JVM with
its own Python workers) and ``spark.python_env.mode: archive`` (icetide's packed
environment shipped with ``spark.archives``). The cluster's processes run without the
test's ``PYTHONPATH``, so executors can import icetide only from the archive.

* ``test_executors_import_from_the_archive``: an application on the cluster asks its
  executors where ``icetide`` and ``sys.prefix`` come from: the unpacked archive in the
  worker's work dir, never the driver's venv or source tree.
* ``test_clickstream_on_cluster_survives_worker_and_driver_kills``:
  ``icetide run examples/clickstream`` (``spark.master=spark://127.0.0.1:PORT``, the
  catalog service, Apache Kafka (KRaft, started here), a private MariaDB with CDC) while clicks and
  business updates flow; kill -9 of one worker (its executor and Python workers with it)
  while batches run: the run goes on committing; the worker comes back; kill -9 of the
  driver; the clicks stop; ``icetide status`` (no Spark) names the cluster's master and
  executors as the last commit's; a ``--once`` drain on a local master (the same lake
  and sources), which resumes from the markers the killed driver committed. Then:
  offsets in ODS ∪ DLQ = produced, none twice; the demo's reconciliation (ODS, DLQ,
  dims = MariaDB, DWD/DWS/ADS = recomputation) passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.devkit.demo.reconcile import reconcile_dims, reconcile_layers, reconcile_ods
from icetide.devkit.embedded.kafka import EmbeddedKafka
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.embedded.spark_cluster import EmbeddedSparkCluster, spark_home
from icetide.devkit.gen.clicks import GenOptions, GenReport
from tests.e2e.pipeline_proc import (
    ODS_BATCH,
    drain,
    kill9,
    log_counts,
    pipeline_env,
    start,
    wait_running,
)
from tests.e2e.test_clickstream_kill9 import Producers, _assert_all_ok, lake, shop

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(900)]  # a hang guard, not a budget

__all__ = ["lake", "shop"]  # fixtures shared with test_clickstream_kill9

#: clicks flow until the kills are done (batches keep coming however slow Spark starts)
CLICKS = GenOptions(count=0, rate=15, bad_ratio=0.02, seed=5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedSparkCluster]:
    with EmbeddedSparkCluster(tmp_path_factory.mktemp("cluster"), workers=2) as running:
        yield running


@pytest.fixture(scope="module")
def pyenv_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose ``pyenv/`` cache both tests share (the archive is packed once)."""
    return tmp_path_factory.mktemp("pyenv-home")


def _cluster_env(env: dict[str, str], cluster: EmbeddedSparkCluster,
                 pyenv_home: Path) -> dict[str, str]:
    env = {**env, "ICETIDE_SPARK__MASTER": cluster.master,
           "ICETIDE_SPARK__PYTHON_ENV__MODE": "archive",
           "ICETIDE_SPARK__EXECUTOR_MEMORY": "768m"}
    home = Path(env["ICETIDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "pyenv").exists():
        (home / "pyenv").symlink_to(pyenv_home / "pyenv", target_is_directory=True)
    (pyenv_home / "pyenv").mkdir(exist_ok=True)
    return env


_PROBE = textwrap.dedent("""
    import json, sys
    from icetide.config import load_settings
    from icetide.runtime.session import get_spark, stop_spark

    def where(_):
        import sys, icetide
        yield icetide.__file__, sys.prefix, sys.path
    spark = get_spark(load_settings(None))
    print(json.dumps(spark.sparkContext.parallelize(range(4), 4).mapPartitions(where)
                     .collect()))
    stop_spark()
""")


def test_executors_import_from_the_archive(cluster: EmbeddedSparkCluster, pyenv_home: Path,
                                           tmp_path: Path) -> None:
    env = _cluster_env({**os.environ, "ICETIDE_HOME": str(tmp_path / "home"),
                        "ICETIDE_CATALOG__TYPE": "hadoop"}, cluster, pyenv_home)
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers
    src = str(Path(__file__).resolve().parents[2] / "src")
    for module, prefix, path in answers:
        work = Path(prefix).parent
        assert Path(prefix).name == "environment", prefix
        assert any(work.is_relative_to(cluster.work_dir(i)) for i in range(2)), prefix
        assert Path(module).is_relative_to(prefix), module
        # nothing of the driver's venv but the worker's own Spark install (SPARK_HOME: its
        # pyspark.zip / py4j / spark-core jar entries), and the archive's site-packages
        assert src not in path, path
        assert not [p for p in path if p.startswith(sys.prefix) and
                    not p.startswith(str(spark_home()))], path
        assert any(p.startswith(prefix) and p.endswith("site-packages") for p in path), path
    assert list((pyenv_home / "pyenv").glob("executor-env-*.tar.gz"))


def test_clickstream_on_cluster_survives_worker_and_driver_kills(
        tmp_path: Path, spark: SparkSession, lake: tuple[Path, str], shop: MariaDBInfo,
        cluster: EmbeddedSparkCluster, pyenv_home: Path) -> None:
    home, cat = lake
    began = time.monotonic()
    args = ("--trigger-interval", "1", "--conf", "clickstream.dims=cdc")
    with EmbeddedKafka(None, tmp_path / "broker") as broker:
        env = _cluster_env(pipeline_env(home, broker.bootstrap, shop), cluster, pyenv_home)
        producers = Producers(broker.bootstrap, shop, CLICKS)
        producers.start()
        try:
            phases = _worker_kill(env, tmp_path / "run-0.log", cluster, args)
        finally:
            clicks, _changes = producers.finish()
        killed_at = time.monotonic()
        _check_status(env, cluster)  # the killed driver's commits name the cluster
        drain(_local(env), *args[2:])
    logs = sorted(tmp_path.glob("run-*.log"))
    print(f"\nclicks: {clicks.valid} valid + {clicks.malformed} malformed; kills "
          f"{killed_at - began:.0f}s ({', '.join(f'{k} {v:.0f}s' for k, v in phases.items())}), "
          f"drain {time.monotonic() - killed_at:.0f}s; "
          f"{log_counts(logs, 'Lost executor', 'Lost task', 'batch failed')}")
    assert clicks.delivery_errors == 0
    _check_offsets(spark, cat, clicks)
    conn = shop.connect()
    try:
        _assert_all_ok([*reconcile_ods(spark, cat, clicks.valid, clicks.malformed),
                        *reconcile_dims(spark, cat, conn, database="user_db"),
                        *reconcile_layers(spark, cat)])
    finally:
        conn.close()


def _local(env: dict[str, str]) -> dict[str, str]:
    """The same lake and sources on a local master: the markers the cluster's driver
    committed are in the catalog, not in the cluster (and a second cluster application
    would cost the suite a minute of executor starts)."""
    local = {k: v for k, v in env.items() if k != "ICETIDE_SPARK__PYTHON_ENV__MODE"}
    return {**local, "ICETIDE_SPARK__MASTER": "local[2]"}


def _worker_kill(env: dict[str, str], log: Path, cluster: EmbeddedSparkCluster,
                 args: tuple[str, ...]) -> dict[str, float]:
    """kill -9 worker 0 while the run's batches go on; the run keeps committing; then
    bring the worker back. Returns when each phase ended (seconds since the start)."""
    began, phases = time.monotonic(), {}
    proc = start(env, log, *args)
    try:
        # the first ODS commit: the layers' batches follow it, so the kill lands in work
        wait_running(proc, log)
        phases["first commit"] = time.monotonic() - began
        cluster.kill_worker(0)
        after = log.read_bytes().count(ODS_BATCH)
        # the batch in flight (lost tasks rerun elsewhere), then one planned after the loss
        _wait_commits(proc, log, after + 2)
        phases["2 commits, 1 worker"] = time.monotonic() - began
        assert b"Lost executor" in log.read_bytes(), "the driver never saw the executor go"
        cluster.start_worker(0)
        _wait_commits(proc, log, log.read_bytes().count(ODS_BATCH) + 1)
        phases["worker back, 1 commit"] = time.monotonic() - began
        assert proc.poll() is None, log.read_text()[-3000:]
    finally:
        kill9(proc)  # the driver: the drain must resume from the committed markers
    return phases


def _wait_commits(proc: subprocess.Popen[bytes], log: Path, count: int,
                  timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while log.read_bytes().count(ODS_BATCH) < count:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"fewer than {count} ODS commits"
        time.sleep(0.3)


def _check_offsets(spark: SparkSession, cat: str, report: GenReport) -> None:
    """Exactly-once at the source: every produced offset once, in the target or the DLQ."""
    target, dlq = f"{cat}.ods_behavior.clickevent", f"{cat}.ods_behavior.clickevent_dlq"
    rows = spark.sql(
        f"SELECT _kafka_partition p, _kafka_offset o FROM {target} "
        f"UNION ALL SELECT `partition` p, `offset` o FROM {dlq}").collect()
    seen = [(r.p, r.o) for r in rows]
    assert len(seen) == len(set(seen)), "duplicated offsets"
    assert len(seen) == report.valid + report.malformed
    by_part: dict[int, list[int]] = {}
    for p, o in seen:
        by_part.setdefault(p, []).append(o)
    for offsets in by_part.values():
        assert sorted(offsets) == list(range(len(offsets)))


def _check_status(env: dict[str, str], cluster: EmbeddedSparkCluster) -> None:
    """``icetide status`` (no Spark) names the master and executors of the last commit."""
    out = subprocess.run([sys.executable, "-m", "icetide.cli", "status", "--format", "json",
                          "--no-lag"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {r["table"]: r for r in json.loads(out.stdout)}
    ods = rows["ods_behavior.clickevent"]
    assert ods["master"] == cluster.master
    assert ods["executors"] and all("@127.0.0.1:" in e for e in ods["executors"])
