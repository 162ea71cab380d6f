"""`icetide run examples/clickstream` as a killable subprocess (end-to-end tests)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

from icetide.devkit.embedded.mariadb import MariaDBInfo

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "examples" / "clickstream"
BATCH_CAP = "ICETIDE_KAFKA__MAX_RECORDS_PER_TRIGGER"


def pipeline_env(home: Path, bootstrap: str, shop: MariaDBInfo) -> dict[str, str]:
    """The environment of a run: private home, the broker, the shop's CDC user, small Spark."""
    env = dict(os.environ)
    env.update({
        "ICETIDE_HOME": str(home),
        "ICETIDE_KAFKA__BOOTSTRAP": bootstrap,
        "ICETIDE_SPARK__MASTER": "local[2]",
        "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
        "ICETIDE_SPARK__SHUFFLE_PARTITIONS": "2",
        BATCH_CAP: "4000",
        "SHOP_HOST": shop.host,
        "SHOP_PORT": str(shop.port),
        "SHOP_USER": shop.cdc_user,
        "SHOP_PASSWORD": shop.cdc_password,
    })
    return env


def start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``icetide -v run PIPELINE *args`` in its own process group, output appended to ``log``."""
    cmd = [sys.executable, "-m", "icetide.cli", "-v", "run", str(PIPELINE), *args]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


#: What the run prints for a committed batch (``_print_batch`` in the run command): of
#: the ODS flow, of any flow.
ODS_BATCH = b"clickevent: +"
ANY_BATCH = b" dead letters, "


def wait_running(proc: subprocess.Popen[bytes], log: Path, timeout: float = 300,
                 committed: bytes = ODS_BATCH) -> None:
    """Until this run has committed its first ODS batch (Spark up, flows discovered), or
    whatever batch ``committed`` names."""
    deadline = time.monotonic() + timeout
    while committed not in (log.read_bytes() if log.exists() else b""):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "pipeline did not start"
        time.sleep(0.2)


def kill9(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole process group (the JVM included)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def commits(spark: SparkSession, table: str) -> int:
    """How many snapshots ``table`` has (0 if it does not exist)."""
    if not spark.catalog.tableExists(table):
        return 0
    return int(spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0])


def drain(env: dict[str, str], *args: str, attempts: int = 3) -> str:
    """``--once`` (uncapped batches) until it exits 0; a crashed drain is just one more
    restart to survive. Returns the successful run's output."""
    env = {k: v for k, v in env.items() if k != BATCH_CAP}
    outputs = []
    for _ in range(attempts):
        final = subprocess.run(
            [sys.executable, "-m", "icetide.cli", "run", str(PIPELINE), "--once", *args],
            env=env, capture_output=True, text=True, timeout=900)
        if final.returncode == 0:
            return final.stdout
        outputs.append(final.stdout[-2000:] + final.stderr[-4000:])
    raise AssertionError("the final --once drain failed:\n" + "\n---\n".join(outputs))


def log_counts(logs: list[Path], *needles: str) -> dict[str, int]:
    """How often each of ``needles`` occurs in the run logs (what the kills interrupted)."""
    text = b"".join(log.read_bytes() for log in logs if log.exists())
    return {needle: text.count(needle.encode()) for needle in needles}
