"""The demo's lake, built once for the end-to-end tests that read it (fixture
``demo_lake`` in conftest.py).

``icetide demo --duration 60`` runs as users run it (a subprocess of the CLI, a private
ICETIDE_HOME, its own MariaDB, broker and Spark) and writes ``--report``. Its catalog
service, on a port of its own, keeps serving the lake after the demo ends, until the
session does: ``test_demo`` checks what the demo reconciled and more, ``test_trino``
reads the same lake through Trino (a clickstream run with CDC updates and deletes, every
layer, maintenance as the flows committed), so the suite runs the whole pipeline once
for both (tests/conftest.py's SHARED_WORKER keeps the two modules on one xdist worker).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icetide.devkit.embedded.process import free_port

DURATION = 60
#: guard only: the demo takes ~2-6 min (startup + warm-up + 60 s + drain + reconcile)
TIMEOUT = 720


@dataclass(frozen=True)
class DemoLake:
    home: Path
    report: dict[str, Any]  # the demo's --report
    metastore_port: int  # its catalog service, serving until the session ends
    output: str = ""  # what the demo printed (stdout and stderr)

    def env(self) -> dict[str, str]:
        """An icetide command's environment for this lake."""
        return {**os.environ, "ICETIDE_HOME": str(self.home),
                "ICETIDE_METASTORE__PORT": str(self.metastore_port)}


def _env(home: Path, metastore_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ICETIDE_HOME": str(home),
        "ICETIDE_METASTORE__PORT": str(metastore_port),
        "ICETIDE_KAFKA__EMBEDDED_PORT": str(free_port()),
        "ICETIDE_DASHBOARD__PORT": str(free_port()),  # the demo serves its dashboard
        "ICETIDE_SPARK__MASTER": "local[2]",
        "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
        "ICETIDE_SPARK__SHUFFLE_PARTITIONS": "2",
    })
    env.pop("ICETIDE_CONFIG", None)
    env.pop("SHOP_PASSWORD", None)
    # as users run it: the JVM's own compilers, not the C1-only driver the suite's short
    # runs get (tests/conftest.py); the demo's pipeline runs for minutes
    env.pop("SPARK_SUBMIT_OPTS", None)
    return env


def run_demo(tmp: Path, metastore_port: int) -> DemoLake:
    home, report, log = tmp / "home", tmp / "report.json", tmp / "demo.log"
    cmd = [sys.executable, "-m", "icetide.cli", "demo", "--duration", str(DURATION),
           "--no-live", "--mariadb-port", "0", "--report", str(report)]
    began = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=_env(home, metastore_port), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(30)
            pytest.fail(f"demo still running after {TIMEOUT}s:\n{log.read_text()[-4000:]}")
    output = log.read_text()
    assert code == 0, f"demo exited {code}:\n{output[-6000:]}"
    print(f"\ndemo took {time.monotonic() - began:.0f}s\n{output[-2500:]}")
    return DemoLake(home, json.loads(report.read_text()), metastore_port, output)
