"""The rest catalog type against a real Iceberg REST catalog: SeaweedFS's (loopback, an
S3 Tables bucket, SigV4 with the store's keys), with the stock Iceberg runtime's client in
Spark and pyiceberg's for the JVM-free readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from icetide.config import load_settings
from icetide.devkit.embedded.seaweed import EmbeddedS3
from icetide.query.duckdb_path import run_duckdb
from icetide.runtime.catalogs import pyiceberg_catalog

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[3]
SIGV4 = {"rest.auth.type": "sigv4", "rest.sigv4-enabled": "true", "rest.signing-name": "s3",
         "rest.signing-region": "us-east-1"}


def test_spark_pyiceberg_and_duckdb_through_a_rest_catalog(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with EmbeddedS3(tmp_path / "s3", table_bucket="tables") as store:
        config = tmp_path / "icetide.yaml"
        config.write_text(yaml.safe_dump({
            "catalog": {"type": "rest", "uri": store.iceberg_rest, "warehouse": "s3://tables",
                        "properties": SIGV4},
            "s3": {"endpoint": store.endpoint, "path_style_access": True},
            "spark": {"master": "local[2]", "driver_memory": "1g"}}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ICETIDE_", "AWS_"))}
        env.update({**store.env(), "ICETIDE_HOME": str(tmp_path / "home"),
                    "S3_PROC_PARTITIONING": "day",  # what SeaweedFS's catalog accepts
                    "ICETIDE_CONFIG": str(config)})
        done = subprocess.run([sys.executable, "-m", "tests.integration.runtime.s3_proc",
                               str(tmp_path / "out.json")], env=env, cwd=REPO, text=True,
                              capture_output=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads((tmp_path / "out.json").read_text())
        assert out["location"].startswith("s3://")
        assert out["count"] == 180 and out["swept"]["orphan_files"] == 1
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = load_settings()
        table = pyiceberg_catalog(settings).load_table(("db", "clicks"))
        assert table.scan().to_arrow().num_rows == 180
        duck = run_duckdb(settings, "SELECT count(*), sum(id) FROM lake.db.clicks")
        assert duck.rows == [(180, out["sum"])]
