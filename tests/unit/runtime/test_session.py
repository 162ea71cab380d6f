"""Spark defaults that depend on the master: shuffle partitions per local core."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import Settings, SparkConfig, load_settings
from icetide.runtime.session import local_cores, shuffle_partitions, spark_conf


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
