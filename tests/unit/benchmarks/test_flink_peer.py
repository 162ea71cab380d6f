"""benchmarks.peers.flink: version pairing, the bench-only jar list and the job's SQL
(no Flink started: the pure parts)."""

from __future__ import annotations

import re

import pytest
from benchmarks.peers.flink.measure import Freshness, RowCheck, Throughput
from benchmarks.peers.flink.report import headline
from benchmarks.peers.flink.run import rates
from benchmarks.peers.flink.sql import COLUMNS, JobOptions, insert_sql, job_spec, source_ddl
from benchmarks.peers.flink.versions import (
    CDC_GROUP,
    DEFAULT,
    HADOOP_GROUP,
    JAR_GROUP,
    Pairing,
    connector_fits,
    flink_minor,
)

from icetide.errors import RuntimeSetupError

OPTIONS = JobOptions("127.0.0.1:9092", "clicktopic", "/tmp/wh",
                     "jdbc:mysql://127.0.0.1:3306/user_db", "app", "it's secret",
                     checkpoint_s=2.5, parallelism=2)


def test_connectors_pair_with_the_flink_minor_they_are_built_for() -> None:
    assert flink_minor("1.20.5") == "1.20"
    assert connector_fits("3.4.0-1.20", "1.20.5")
    assert not connector_fits("4.0.1-2.0", "1.20.5")
    with pytest.raises(RuntimeSetupError, match=re.escape("built for Flink 2.0, not 1.20.5")):
        Pairing(kafka_connector="4.0.1-2.0").coordinates()
    with pytest.raises(RuntimeSetupError, match=re.escape("MAJOR.MINOR")):
        flink_minor("latest")


def test_the_default_pairing_names_iceberg_for_its_flink_minor() -> None:
    coords = DEFAULT.coordinates()
    assert f"org.apache.iceberg:iceberg-flink-runtime-1.20:{DEFAULT.iceberg}" in coords
    assert "org.apache.flink:flink-connector-kafka:3.4.0-1.20" in coords
    assert DEFAULT.pip_requirement == "apache-flink==1.20.5"


def test_the_jar_list_is_for_a_jvm_of_its_own_never_spark() -> None:
    spec = DEFAULT.jar_spec()
    assert set(spec.groups) == {JAR_GROUP, HADOOP_GROUP, CDC_GROUP}
    assert all(g.jvm == "own" for g in spec.groups.values())
    assert "org.apache.flink:flink-connector-base" in spec.groups[JAR_GROUP].exclude
    assert all(c.startswith("org.apache.hadoop:") for c in spec.groups[HADOOP_GROUP].coordinates)


def test_the_source_reads_the_topic_as_json_with_text_integers() -> None:
    ddl = source_ddl(OPTIONS)
    assert "'topic' = 'clicktopic'" in ddl
    assert "'json.ignore-parse-errors' = 'true'" in ddl
    assert "expendTime STRING, webpageId STRING" in ddl
    assert "proctime AS PROCTIME()" in ddl


def test_the_insert_cleans_like_the_ods_and_looks_products_up_as_of_proctime() -> None:
    sql = insert_sql()
    assert "FOR SYSTEM_TIME AS OF c.proctime" in sql
    for required in ("uid", "productId", "updateTime"):
        assert f"c.{required} IS NOT NULL" in sql
    assert "(c.expendTime IS NULL OR TRY_CAST(c.expendTime AS INT) IS NOT NULL)" in sql
    assert "DATE_FORMAT(TO_TIMESTAMP_LTZ(c.updateTime, 3), 'yyyyMMdd') AS dt" in sql


def test_the_job_spec_commits_at_the_checkpoint_interval_in_utc() -> None:
    spec = job_spec(OPTIONS, ["/jars/a.jar"])
    assert spec["config"]["execution.checkpointing.interval"] == "2500ms"
    assert spec["config"]["table.local-time-zone"] == "UTC"
    assert spec["jars"] == ["/jars/a.jar"]
    assert spec["statements"][-1].startswith("INSERT INTO peer.ods_behavior.clickevent")
    assert "'password' = 'it''s secret'" in spec["statements"][1]  # quoted literal
    assert "PARTITIONED BY (dt)" in spec["statements"][4]
    assert all(c in spec["statements"][4] for c in COLUMNS)


def test_rates_and_the_headline() -> None:
    assert rates("2000, 20000") == [2000.0, 20000.0]
    with pytest.raises(SystemExit, match="--rates"):
        rates("fast")
    ours = Throughput(1_000_000, 20.0, {"jvm": 30.0})
    theirs = Throughput(1_000_000, 10.0, {"flink": 20.0})
    window = Freshness(2000.0, 60.0, icetide=[4.0, 5.0, 6.0], flink=[2.0, 2.5, 3.0])
    check = RowCheck(1000, 1000, 1000, True, 0, 0)
    line = headline(ours, theirs, [window], check)
    assert line == ("icetide vs Flink 1.20.5 (seed 001's job): events/s 0.50×, CPU-s per 1M "
                    "1.50×; freshness p50 at 2,000/s 2.00× (5.00s vs 2.50s); same rows")
    assert headline(ours, None, [], RowCheck(1, 1, 0, False, 1, 0)).endswith("ROWS DIFFER")
