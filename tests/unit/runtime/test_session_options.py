"""Spark settings that shape the session and the executors' Python (docs/options.md)."""

from __future__ import annotations

from pathlib import Path

from icetide.config import PythonEnvConfig, Settings, SparkConfig
from icetide.runtime.pyenv import closure
from icetide.runtime.session import spark_conf


def test_app_name_and_driver_memory_reach_the_spark_conf(tmp_path: Path) -> None:
    conf = spark_conf(Settings(home=tmp_path, spark=SparkConfig(
        app_name="clicks-prod", driver_memory="3g")), [])
    assert (conf["spark.app.name"], conf["spark.driver.memory"]) == ("clicks-prod", "3g")
    default = spark_conf(Settings(home=tmp_path), [])
    assert (default["spark.app.name"], default["spark.driver.memory"]) == ("icetide", "2g")


def test_packages_join_and_exclude_leaves_the_executors_archive() -> None:
    def names(env: PythonEnvConfig) -> set[str]:
        return {d.metadata["Name"].lower() for d in closure(env)}

    plain = names(PythonEnvConfig())
    assert "pytest" not in plain and "pyarrow" in plain
    assert "pytest" in names(PythonEnvConfig(packages=["pytest"]))  # a pipeline's own import
    assert "pyarrow" not in names(PythonEnvConfig(exclude=["pyarrow"]))
