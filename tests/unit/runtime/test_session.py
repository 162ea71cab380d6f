"""Spark defaults that depend on the master: shuffle partitions per local core, the
driver JVM's collector."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import Settings, SparkConfig, load_settings
from icetide.runtime.session import (
    LOCAL_GC,
    driver_java_options,
    local_cores,
    shuffle_partitions,
    spark_conf,
)


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[2]", 2), ("local[*]", 16), ("local[3, 2]", 3), ("local[8,1]", 8),
    ("spark://m:7077", None), ("yarn", None), ("k8s://https://h:443", None),
    ("local-cluster[2,1,1024]", None),
])
def test_local_cores_reads_the_masters_task_slots(master: str, cores: int | None) -> None:
    assert local_cores(master, cpu_count=16) == cores


def test_shuffle_partitions_default_to_four_and_no_more_than_local_cores() -> None:
    assert shuffle_partitions(SparkConfig(master="local[*]"), cpu_count=2) == 2
    assert shuffle_partitions(SparkConfig(master="local[*]"), cpu_count=16) == 4
    assert shuffle_partitions(SparkConfig(master="local"), cpu_count=16) == 1
    assert shuffle_partitions(SparkConfig(master="spark://m:7077"), cpu_count=2) == 4


def test_a_configured_count_always_wins() -> None:
    assert shuffle_partitions(SparkConfig(master="local[2]", shuffle_partitions=8)) == 8
    assert shuffle_partitions(SparkConfig(master="yarn", shuffle_partitions=1)) == 1


def test_the_setting_reaches_the_spark_conf_and_the_env_overlay(tmp_path: Path) -> None:
    local = Settings(home=tmp_path, spark=SparkConfig(master="local[2]"))
    assert spark_conf(local, [])["spark.sql.shuffle.partitions"] == "2"
    overlaid = load_settings(None, environ={
        "ICETIDE_HOME": str(tmp_path), "ICETIDE_SPARK__SHUFFLE_PARTITIONS": "6"})
    assert spark_conf(overlaid, [])["spark.sql.shuffle.partitions"] == "6"


def test_a_local_driver_jvm_uses_the_throughput_collector(tmp_path: Path) -> None:
    log4j = tmp_path / "log4j2.properties"
    assert driver_java_options("local[2]", log4j, "2g") == (
        f"-Dlog4j.configurationFile=file:{log4j} {LOCAL_GC} -Xms2g")
    assert driver_java_options("local[*]") == LOCAL_GC
    assert driver_java_options("local[*]", None, "lots") == LOCAL_GC  # not a size: no -Xms
    assert driver_java_options("spark://m:7077", log4j, "2g") == (
        f"-Dlog4j.configurationFile=file:{log4j}")
    assert driver_java_options("yarn") == ""
    assert driver_java_options("local-cluster[2,1,1024]") == ""
    local = Settings(home=tmp_path, spark=SparkConfig(master="local[2]", driver_memory="3g"))
    assert spark_conf(local, [])["spark.driver.extraJavaOptions"] == f"{LOCAL_GC} -Xms3g"
    cluster = Settings(home=tmp_path, spark=SparkConfig(master="spark://m:7077"))
    assert "spark.driver.extraJavaOptions" not in spark_conf(cluster, [])
    mine = {"spark.driver.extraJavaOptions": "-XX:+UseG1GC"}
    chosen = Settings(home=tmp_path, spark=SparkConfig(master="local[2]", conf=mine))
    assert spark_conf(chosen, [])["spark.driver.extraJavaOptions"] == "-XX:+UseG1GC"
