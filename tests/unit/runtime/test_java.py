"""Finding Java: version parsing, the real system Java, and bad JAVA_HOME values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icetide.errors import RuntimeSetupError
from icetide.runtime.java import check_java, parse_java_version


@pytest.mark.parametrize(
    ("output", "version", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime', "17.0.15", 17),
        ('java version "1.8.0_292"\nJava(TM) SE', "1.8.0_292", 8),
        ('openjdk version "21" 2023-09-19', "21", 21),
        ('openjdk version "25-ea" 2025-09-16', "25-ea", 25),
    ],
)
def test_parse_java_version(output: str, version: str, major: int) -> None:
    assert parse_java_version(output) == (version, major)


def test_parse_garbage_says_how_to_install() -> None:
    with pytest.raises(RuntimeSetupError, match="openjdk-17-jre-headless"):
        parse_java_version("bash: java: command not found")


def test_the_machine_has_a_usable_java() -> None:
    info = check_java()
    assert 17 <= info.major < 23
    assert info.executable.is_file()


def _fake_java_home(tmp_path: Path, version_line: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return home


@pytest.mark.parametrize("line", ['openjdk version "11.0.2" 2019-01-15', 'java version "1.8.0_1"'])
def test_too_old_java_home_is_refused(tmp_path: Path, line: str) -> None:
    home = _fake_java_home(tmp_path, line)
    with pytest.raises(RuntimeSetupError, match=r"cannot run Spark 3.5: need Java 17–22"):
        check_java({"JAVA_HOME": str(home), "PATH": os.environ.get("PATH", "")})


def test_java_23_plus_is_refused(tmp_path: Path) -> None:
    home = _fake_java_home(tmp_path, 'openjdk version "25" 2025-09-16')
    with pytest.raises(RuntimeSetupError, match=r"Java 25 at .* \(from JAVA_HOME\)"):
        check_java({"JAVA_HOME": str(home)})


def test_java_home_without_java(tmp_path: Path) -> None:
    with pytest.raises(RuntimeSetupError, match=r"JAVA_HOME=.* has no bin/java"):
        check_java({"JAVA_HOME": str(tmp_path)})


def test_fake_java_17_home_is_accepted(tmp_path: Path) -> None:
    home = _fake_java_home(tmp_path, 'openjdk version "17.0.9" 2023-10-17')
    info = check_java({"JAVA_HOME": str(home)})
    assert (info.major, info.source, info.java_home) == (17, "JAVA_HOME", home)
