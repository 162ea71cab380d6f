"""``icetide jars`` as a user runs it: list what install resolved, copy it, and run Spark
from the copy with no cache and no reachable repository (an air-gapped machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icetide.runtime.jars import load_spec

pytestmark = pytest.mark.spark


def _icetide(*args: str, env: dict[str, str], timeout: float = 300
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "icetide.cli", *args], env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICETIDE_")}
    return {**env, "ICETIDE_HOME": str(tmp_path / "home"), "ICETIDE_CATALOG__TYPE": "hadoop",
            "ICETIDE_SPARK__MASTER": "local[1]", **extra}


def test_list_copy_and_run_from_the_copy_offline(tmp_path: Path) -> None:
    listed = _icetide("jars", "--format", "json", env=_env(tmp_path))
    assert listed.returncode == 0, listed.stderr
    listing = json.loads(listed.stdout)
    assert listing["resolved"] is True  # make install resolved them
    pinned = {c for g in load_spec().groups.values() for c in g.coordinates}
    assert pinned <= {r["coordinate"] for r in listing["rows"]}
    assert all(Path(r["path"]).is_file() for r in listing["rows"])
    assert {r["group"] for r in listing["rows"] if r["used"]} == {"iceberg", "kafka"}

    copied = _icetide("jars", "copy", str(tmp_path / "airgap"), env=_env(tmp_path))
    assert copied.returncode == 0, copied.stderr
    offline = _env(tmp_path, ICETIDE_JARS__DIR=str(tmp_path / "airgap"),
                   ICETIDE_JARS__CACHE=str(tmp_path / "no-cache"),
                   ICETIDE_JARS__REPOSITORY="http://127.0.0.1:9/maven2/")
    ran = _icetide("sql", "SELECT 1 AS one", "--format", "json", env=offline)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [{"one": 1}]
    assert not list((tmp_path / "no-cache").glob("resolved-*.json"))


def test_without_cache_or_network_a_command_fails_at_once_in_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path, ICETIDE_JARS__CACHE=str(tmp_path / "empty"),
               ICETIDE_JARS__REPOSITORY="http://127.0.0.1:9/maven2/")
    started = time.monotonic()
    ran = _icetide("sql", "SELECT 1", env=env)
    assert time.monotonic() - started < 30
    assert ran.returncode == 2
    [line] = ran.stderr.strip().splitlines()
    assert line.lower().startswith("error: missing jvm dependencies org.apache.iceberg:")
    assert "cannot reach the Maven repository http://127.0.0.1:9/maven2/" in line
    assert "icetide jars resolve" in line


def test_spark_hudi_puts_the_hudi_bundle_on_the_class_path(tmp_path: Path) -> None:
    listed = _icetide("jars", "--format", "json", env=_env(tmp_path, ICETIDE_SPARK__HUDI="true"))
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["rows"]
    assert {r["group"] for r in rows if r["used"]} == {"iceberg", "kafka", "hudi"}
    assert any(r["coordinate"] == "org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0"
               and r["used"] for r in rows)
