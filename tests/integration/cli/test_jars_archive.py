"""``icetide jars archive``: the class archive `make install` built is the one a Spark
session of this configuration maps — proven with ``-Xshare:on``, under which a JVM whose
archive does not match its class path refuses to start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

_SESSION = """
from icetide.config import load_settings
from icetide.runtime.session import get_spark, stop_spark
spark = get_spark(load_settings(None))
args = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
print("ARGS", list(args.getInputArguments()))
print("ROWS", spark.sql("SELECT 1 AS one").collect()[0].one)
stop_spark()
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICETIDE_")}
    return {**env, "ICETIDE_HOME": str(tmp_path / "home"), "ICETIDE_CATALOG__TYPE": "hadoop",
            "ICETIDE_SPARK__MASTER": "local[1]", **extra}


def test_the_installed_archive_is_mapped_by_a_session(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "icetide.cli", "jars", "archive", "--format",
                            "json"], env=_env(tmp_path), capture_output=True, text=True,
                           timeout=900, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    report = json.loads(built.stdout)
    assert Path(report["path"]).is_file() and report["bytes"] > 10_000_000
    # -Xshare:on: a JVM that cannot map the archive it is given exits at once
    run = subprocess.run([sys.executable, "-c", _SESSION],
                         env=_env(tmp_path, JAVA_TOOL_OPTIONS="-Xshare:on"),
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert f"-XX:SharedArchiveFile={report['path']}" in run.stdout
    assert "ROWS 1" in run.stdout

