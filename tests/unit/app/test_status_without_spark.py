"""``icetide status`` runs without Spark: nothing on its path imports pyspark or py4j."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUN_STATUS = """
import sys
from icetide.cli.main import main
main(["status", "--format", "json", "--no-lag"])
print("loaded:", sorted(m for m in ("pyspark", "py4j") if m in sys.modules), file=sys.stderr)
"""


def test_icetide_status_imports_no_pyspark(tmp_path: Path) -> None:
    env = {**os.environ, "ICETIDE_HOME": str(tmp_path / "home"),
           "ICETIDE_CATALOG__TYPE": "hadoop"}
    done = subprocess.run([sys.executable, "-c", RUN_STATUS], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # an empty lake: no table
    assert "loaded: []" in done.stderr


def test_status_and_its_keys_import_no_pyspark() -> None:
    code = ("import sys, icetide.app.status, icetide.app.context, icetide.model.keys\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"
