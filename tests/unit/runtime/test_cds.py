"""The class archive's key and options: an archive is used only for the JVM build and the
exact class path (every jar's size and time) it was dumped with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icetide.config import load_settings
from icetide.runtime.cds import (
    QUIET,
    archive_key,
    archive_path,
    dump_options,
    shared_archive_options,
)
from icetide.runtime.java import JavaInfo
from icetide.runtime.session import spark_conf


@pytest.fixture()
def java(tmp_path: Path) -> JavaInfo:
    exe = tmp_path / "jdk" / "bin" / "java"
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    return JavaInfo(exe, tmp_path / "jdk", "17.0.15", 17, "PATH")


@pytest.fixture()
def jars(tmp_path: Path) -> list[Path]:
    made = []
    for name in ("iceberg.jar", "kafka.jar", "spark/core.jar"):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"jar " + name.encode())
        made.append(path)
    return made


def test_the_key_changes_with_a_jar_the_java_or_the_order(java: JavaInfo, jars: list[Path],
                                                          tmp_path: Path) -> None:
    ours, wheel = jars[:2], jars[2].parent
    key = archive_key(java, ours, wheel)
    assert archive_key(java, ours, wheel) == key
    assert archive_key(java, ours[::-1], wheel) != key
    assert archive_key(JavaInfo(java.executable, None, "17.0.16", 17, "PATH"), ours,
                       wheel) != key
    os.utime(ours[0], ns=(1, 1))  # a jar replaced (re-resolved) is another class path
    assert archive_key(java, ours, wheel) != key
    (wheel / "extra.jar").write_bytes(b"x")  # pyspark upgraded
    assert archive_key(java, ours, tmp_path / "none") != archive_key(java, ours, wheel)


def test_options_name_the_archive_only_when_it_exists(java: JavaInfo, jars: list[Path],
                                                      tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert shared_archive_options(cache, java, jars[:2]) == []
    archive = archive_path(cache, java, jars[:2])
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    assert shared_archive_options(cache, java, jars[:2]) == [
        f"-XX:SharedArchiveFile={archive}", *QUIET]
    assert shared_archive_options(cache, java, jars[:1]) == []  # another class path
    jars[0].unlink()  # a jar gone: no archive (the session reports the jar itself)
    assert shared_archive_options(cache, java, jars[:2]) == []


def test_the_driver_options_carry_the_archive_and_user_conf_still_wins(tmp_path: Path) -> None:
    opts = dump_options(tmp_path / "a.jsa")
    assert opts[0] == f"-XX:ArchiveClassesAtExit={tmp_path / 'a.jsa'}"
    settings = load_settings(None, environ={"ICETIDE_SPARK__MASTER": "local[2]"})
    conf = spark_conf(settings, [], driver_options=opts)
    assert opts[0] in conf["spark.driver.extraJavaOptions"].split()
    mine = settings.model_copy(update={"spark": settings.spark.model_copy(
        update={"conf": {"spark.driver.extraJavaOptions": "-Dmine=1"}})})
    assert spark_conf(mine, [], driver_options=opts)["spark.driver.extraJavaOptions"] == (
        "-Dmine=1")
