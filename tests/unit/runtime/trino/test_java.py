"""A Java for Trino (24+), never the Spark one (17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import JarsConfig, Settings, TrinoConfig
from icetide.errors import RuntimeSetupError
from icetide.runtime.trino.java import MIN_MAJOR, java_major, trino_java_home

JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def test_the_found_java_runs_trino() -> None:
    home = trino_java_home(Settings())  # the cache `make install-test` filled
    major = java_major(home)
    assert major is not None and major >= MIN_MAJOR


def test_java_17_is_refused_when_chosen(tmp_path: Path) -> None:
    assert java_major(JDK17) == 17
    settings = Settings(jars=JarsConfig(cache=tmp_path), trino=TrinoConfig(java_home=JDK17))
    with pytest.raises(RuntimeSetupError, match="Trino needs Java 24 or newer"):
        trino_java_home(settings)


def test_java_home_17_is_passed_over(tmp_path: Path) -> None:
    home = trino_java_home(Settings(jars=JarsConfig(cache=tmp_path)),
                           environ={"JAVA_HOME": str(JDK17)})
    assert home != JDK17


def test_a_missing_java_is_none(tmp_path: Path) -> None:
    assert java_major(tmp_path) is None
