"""Resolving the pinned list with the real Ivy of pyspark's jars, from a Maven repository on
disk that the test writes (so nothing here needs the network), into a private cache."""

from __future__ import annotations

import shutil
import time
import zipfile
from pathlib import Path

import pytest

from icetide.config import JarsConfig, Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.classpath import copy_jars, group_jars, resolve_into_cache
from icetide.runtime.jars import JarGroup, JarSpec, manifest_path

_POM = """<project><modelVersion>4.0.0</modelVersion><groupId>{g}</groupId>
<artifactId>{a}</artifactId><version>{v}</version><dependencies>{deps}</dependencies></project>"""
_DEP = ("<dependency><groupId>{}</groupId><artifactId>{}</artifactId>"
        "<version>{}</version></dependency>")


def _publish(repo: Path, coordinate: str, *deps: str) -> None:
    g, a, v = coordinate.split(":")
    folder = repo / g.replace(".", "/") / a / v
    folder.mkdir(parents=True)
    (folder / f"{a}-{v}.pom").write_text(
        _POM.format(g=g, a=a, v=v, deps="".join(_DEP.format(*d.split(":")) for d in deps)))
    with zipfile.ZipFile(folder / f"{a}-{v}.jar", "w") as jar:
        jar.writestr(f"{a}.txt", coordinate)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "m2"
    _publish(repo, "org.ex:engine:1.0", "org.ex:helper:2.1", "org.slf4j:slf4j-api:2.0.7")
    _publish(repo, "org.ex:helper:2.1")
    _publish(repo, "org.slf4j:slf4j-api:2.0.7")  # pyspark ships it: never resolved
    _publish(repo, "org.ex:driver:3")
    return repo


SPEC = JarSpec(groups={
    "engine": JarGroup(why="e", coordinates=("org.ex:engine:1.0",)),
    "driver": JarGroup(why="d", coordinates=("org.ex:driver:3",)),
})


def _settings(tmp_path: Path, repository: str, **jars: Path) -> Settings:
    return Settings(home=tmp_path / "home",
                    jars=JarsConfig(cache=tmp_path / "cache", repository=repository, **jars))


def test_resolves_each_group_with_its_transitive_jars_once(tmp_path: Path, repo: Path) -> None:
    settings = _settings(tmp_path, repo.as_uri())
    found = resolve_into_cache(settings, SPEC)
    assert [j.coordinate for j in found["engine"]] == ["org.ex:engine:1.0", "org.ex:helper:2.1"]
    assert [j.coordinate for j in found["driver"]] == ["org.ex:driver:3"]
    assert all(j.path.is_file() and j.path.is_relative_to(tmp_path / "cache")
               for jars in found.values() for j in jars)
    assert manifest_path(tmp_path / "cache", SPEC).is_file()
    shutil.rmtree(repo)  # a run after install needs no repository at all
    started = time.monotonic()
    assert resolve_into_cache(settings, SPEC) == found
    assert time.monotonic() - started < 1.0


def test_no_repository_and_no_cache_fails_at_once_naming_the_coordinates(
        tmp_path: Path) -> None:
    for repository in ((tmp_path / "absent").as_uri(), "http://127.0.0.1:9/maven2/"):
        started = time.monotonic()
        with pytest.raises(RuntimeSetupError) as err:
            resolve_into_cache(_settings(tmp_path, repository), SPEC)
        message = str(err.value)
        assert "org.ex:engine:1.0, org.ex:driver:3" in message
        assert "icetide jars resolve" in message and "ICETIDE_JARS__DIR" in message
        assert "\n" not in message
        assert time.monotonic() - started < 30


def test_a_copied_directory_serves_a_machine_without_network(tmp_path: Path, repo: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.setattr("icetide.runtime.classpath.load_spec", lambda: SPEC)
    copied = copy_jars(_settings(tmp_path, repo.as_uri()), tmp_path / "airgap")
    assert sorted(p.name for p in (tmp_path / "airgap").iterdir()) == [
        "driver-3.jar", "engine-1.0.jar", "helper-2.1.jar", "icetide-jars.json"]
    offline = Settings(home=tmp_path / "h2", jars=JarsConfig(
        dir=tmp_path / "airgap", cache=tmp_path / "empty", repository="http://127.0.0.1:9/"))
    assert group_jars(offline, ["engine"]) == [j.path for j in copied["engine"]]
    assert not (tmp_path / "empty").exists()  # nothing resolved
    # a directory of jars from elsewhere (no manifest) must hold each group's own jars
    (tmp_path / "airgap" / "icetide-jars.json").unlink()
    (tmp_path / "airgap" / "driver-3.jar").unlink()
    assert len(group_jars(offline, ["engine"])) == 2
    with pytest.raises(RuntimeSetupError, match=r"org\.ex:driver:3 .*not in jars\.dir"):
        group_jars(offline, ["driver"])
