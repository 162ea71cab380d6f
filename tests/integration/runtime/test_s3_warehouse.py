"""A warehouse on a real S3-compatible store (SeaweedFS on loopback, started here):
Spark through the embedded metastore, pyiceberg by name, the DuckDB path, the orphan
sweep listing objects, and credentials that do not fit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from icetide.app.context import Context
from icetide.config import load_settings
from icetide.devkit.embedded.process import free_port
from icetide.devkit.embedded.seaweed import EmbeddedS3, S3Info
from icetide.query.duckdb_path import run_duckdb
from icetide.runtime.catalogs import pyiceberg_catalog
from tests.metastores import stop_metastores_under

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Info]:
    with EmbeddedS3(tmp_path_factory.mktemp("s3")) as info:
        yield info


def _env(info: S3Info, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICETIDE_", "AWS_"))}
    return {**env, **info.env(), "ICETIDE_HOME": str(home),
            "ICETIDE_CATALOG__WAREHOUSE": f"s3://{info.bucket}/{home.name}",
            "ICETIDE_S3__ENDPOINT": info.endpoint, "ICETIDE_S3__PATH_STYLE_ACCESS": "true",
            "ICETIDE_METASTORE__PORT": str(free_port()), "ICETIDE_SPARK__MASTER": "local[2]",
            "ICETIDE_SPARK__DRIVER_MEMORY": "1g", **extra}


def _objects(info: S3Info, prefix: str) -> set[str]:
    from pyarrow.fs import FileSelector, FileType, S3FileSystem

    fs = S3FileSystem(access_key=info.access_key, secret_key=info.secret_key, scheme="http",
                      endpoint_override=info.endpoint.removeprefix("http://"))
    found = fs.get_file_info(FileSelector(f"{info.bucket}/{prefix}", recursive=True,
                                          allow_not_found=True))
    return {f.path for f in found if f.type == FileType.File}


def test_every_reader_and_the_orphan_sweep_on_s3(store: S3Info, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "lake1"
    env = _env(store, home)
    try:
        done = subprocess.run([sys.executable, "-m", "tests.integration.runtime.s3_proc",
                               str(tmp_path / "out.json")], env=env, cwd=REPO, text=True,
                              capture_output=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads((tmp_path / "out.json").read_text())
        assert out["location"].startswith(f"s3://{store.bucket}/lake1/")
        assert (out["count"], out["sum"]) == (180, sum(i for i in range(200) if i % 10))
        assert out["swept"]["orphan_files"] == 1
        assert out["swept"]["sample"][0].endswith("orphan-never-committed.parquet")
        assert {"compaction", "expiry"} <= set(out["maintained"])
        assert out["served"] == 180  # HiveServer2 (icetide serve sql) on the same lake
        objects = _objects(store, "lake1")
        assert not any(o.endswith("orphan-never-committed.parquet") for o in objects)
        assert sum(o.endswith(".parquet") for o in objects) >= 2  # referenced ones stay
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = load_settings()
        table = pyiceberg_catalog(settings).load_table(("db", "clicks"))
        ids = table.scan().to_arrow().column("id").to_pylist()
        assert sorted(ids) == [i for i in range(200) if i % 10]
        [row] = [r for r in Context(settings).status(lag=False) if r.table == "db.clicks"]
        assert row.rows_total == 180 and row.last_commit_ms is not None
        duck = run_duckdb(settings, "SELECT kind, count(*) FROM lake.db.clicks GROUP BY kind "
                                    "ORDER BY kind")
        assert duck.rows == [("click", 100), ("view", 80)]
    finally:
        stop_metastores_under(tmp_path)


@pytest.mark.parametrize("secret", ["wrong-secret", None])
def test_credentials_that_do_not_fit_stop_at_once_naming_endpoint_and_variable(
        store: S3Info, tmp_path: Path, secret: str | None) -> None:
    env = _env(store, tmp_path / "lake2")
    if secret is None:
        del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    else:
        env["AWS_SECRET_ACCESS_KEY"] = secret
    done = subprocess.run([sys.executable, "-m", "icetide.cli", "sql",
                           "CREATE NAMESPACE nothing_written"], env=env, text=True,
                          capture_output=True, timeout=120, check=False)
    try:
        assert done.returncode != 0
        [line] = done.stderr.strip().splitlines()
        assert store.endpoint in line and "AWS_SECRET_ACCESS_KEY" in line
        assert "s3://lake/lake2" in line
        assert secret is None or secret not in line
        assert not _objects(store, "lake2")
        assert not (tmp_path / "lake2" / "metastore" / "service.json").exists()
    finally:
        stop_metastores_under(tmp_path)
