"""What icetide hands Ivy and reads back from it (the resolution itself:
tests/integration/runtime/test_classpath.py)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from icetide.runtime.ivy import ivy_module, ivy_settings, read_report, spark_artifacts
from icetide.runtime.jars import JarGroup, JarSpec


def test_spark_artifacts_are_named_without_their_versions(tmp_path: Path) -> None:
    for name in ("zstd-jni-1.5.5-4.jar", "log4j-1.2-api-2.20.0.jar", "hive-exec-2.3.9-core.jar",
                 "json4s-jackson_2.12-3.7.0-M11.jar", "scala-library-2.12.18.jar"):
        (tmp_path / name).write_bytes(b"")
    assert spark_artifacts(tmp_path) == [
        "hive-exec", "json4s-jackson_2.12", "log4j-1.2-api", "scala-library", "zstd-jni"]


def test_the_module_has_a_configuration_per_group_and_excludes_spark_s_own() -> None:
    spec = JarSpec(groups={
        "kafka": JarGroup(why="k", coordinates=("org.apache.spark:spark-sql-kafka:3.5.7",)),
        "pg": JarGroup(why="p", coordinates=("org.postgresql:postgresql:42.7.14",)),
    })
    root = ElementTree.fromstring(ivy_module(spec, ["slf4j-api", "postgresql"]))
    assert [c.get("name") for c in root.iter("conf")] == ["kafka", "pg"]
    deps = {d.get("name"): d.get("conf") for d in root.iter("dependency")}
    assert deps == {"spark-sql-kafka": "kafka->default", "postgresql": "pg->default"}
    # what Spark ships is left to Spark; a pinned artifact never excludes itself
    assert [e.get("module") for e in root.iter("exclude")] == ["slf4j-api"]
    settings = ElementTree.fromstring(ivy_settings("https://mirror.example/m2"))
    assert settings.find("resolvers/ibiblio").get("root") == "https://mirror.example/m2/"


def test_the_report_gives_each_jar_with_its_coordinate_and_skips_evicted(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(
        '<ivy-report><dependencies><module organisation="o" name="a">'
        '<revision name="2"><artifacts><artifact name="a" ext="jar" location="/c/a-2.jar"/>'
        '<artifact name="a" ext="pom" location="/c/a-2.pom"/></artifacts></revision>'
        '<revision name="1" evicted="latest-revision"><artifacts>'
        '<artifact name="a" ext="jar" location="/c/a-1.jar"/></artifacts></revision>'
        "</module></dependencies></ivy-report>")
    [jar] = read_report(report)
    assert (jar.coordinate, jar.path) == ("o:a:2", Path("/c/a-2.jar"))
