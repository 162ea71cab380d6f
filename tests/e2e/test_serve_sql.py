"""``icetide serve sql`` as users run it: a CLI subprocess with a password from the
environment, a PyHive client, then SIGTERM stops it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from pyhive import hive
from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.devkit.embedded.process import free_port
from icetide.runtime.jars import pyspark_jars_dir

pytestmark = pytest.mark.spark

FLOWS = """
from icetide import pipelines as dp

@dp.materialized_view(name="srv_cli.doubled")
def doubled():
    return dp.read("srv_cli.t").selectExpr("n * 2 AS n")
"""


def _wait_for_url(proc: subprocess.Popen[str], timeout: float = 240.0) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "JDBC URL:" in line:
            return line.split("JDBC URL:")[1].strip()
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"no JDBC URL printed; exit {proc.poll()}")


def test_cli_serves_the_lake_with_a_password_until_sigterm(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.srv_cli")
    spark.sql("CREATE OR REPLACE TABLE lake.srv_cli.t (n int) USING iceberg")
    spark.sql("INSERT INTO lake.srv_cli.t VALUES (1), (2), (3)")
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json",
                                                                 exclude_none=True)))
    pipeline = tmp_path / "pipe"
    pipeline.mkdir()
    (pipeline / "icetide-pipeline.yml").write_text("name: pipe\ncatalog: lake\n")
    (pipeline / "flows.py").write_text(FLOWS)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICETIDE_SQL_SERVER")}
    env.update({"ICETIDE_SQL_SERVER__PASSWORD": "cli-s3cret", "ICETIDE_SQL_SERVER__USER": "bi",
                "PYTHONPATH": os.pathsep.join(sys.path)})
    cmd = [sys.executable, "-m", "icetide.cli", "serve", "sql", str(pipeline),
           "--config", str(config), "--host", "0.0.0.0", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)
    try:
        assert _wait_for_url(proc) == f"jdbc:hive2://0.0.0.0:{port}/default"
        assert proc.stdout is not None
        banner = [proc.stdout.readline() for _ in range(4)]
        assert "  tables: srv_cli.doubled\n" in banner, banner
        conn = hive.connect(host="127.0.0.1", port=port, username="bi",
                            password="cli-s3cret", auth="CUSTOM")
        cursor = conn.cursor()
        cursor.execute("SELECT sum(n) FROM srv_cli.t")
        assert cursor.fetchall() == [(6,)]
        conn.close()
        with pytest.raises(Exception, match="Error validating the login"):
            hive.connect(host="127.0.0.1", port=port, username="bi", password="nope",
                         auth="CUSTOM")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    assert "SQL server stopped" in err
    assert "cli-s3cret" not in out + err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["icetide.yaml", "pipe"]  # nothing new


def _beeline(url: str, query: str) -> subprocess.CompletedProcess[str]:
    spark_home = pyspark_jars_dir().parent
    return subprocess.run([str(spark_home / "bin" / "beeline"), "-u", url,  # not --silent:
                           "--outputformat=csv2", "-e", query],  # it asks for the logs then
                          capture_output=True, text=True, timeout=180, check=False,
                          env={**os.environ, "SPARK_HOME": str(spark_home)})


def test_a_beeline_query_leaves_the_server_quiet_and_a_failed_one_is_logged(
        icetide_settings: Settings, tmp_path: Path) -> None:
    """beeline asks for each statement's log, which the server does not keep: the server
    printed two Java stack traces per query for it ("Couldn't find log associated with
    operation handle"). Quiet unless something is wrong: a failed query is logged."""
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(icetide_settings.model_dump(mode="json",
                                                                 exclude_none=True)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICETIDE_SQL_SERVER")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    proc = subprocess.Popen([sys.executable, "-m", "icetide.cli", "serve", "sql", "--config",
                             str(config), "--port", str(free_port())], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        url = _wait_for_url(proc)
        done = _beeline(url, "select 6 * 7 AS answer")
        assert done.returncode == 0, done.stderr[-2000:]
        assert "42" in done.stdout.split()
        failed = _beeline(url, "select nosuchcolumn")
        assert failed.returncode != 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    assert "Couldn't find log" not in err, err[-3000:]
    [logged] = [line for line in err.splitlines() if " ERROR " in line]
    assert "SparkExecuteStatementOperation: Error executing query" in logged
