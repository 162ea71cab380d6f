"""The Trino server by Maven coordinates: download (SHA-1 checked), unpack, cache."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from icetide.config import JarsConfig, Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.trino import dist


def _tar(top: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text, mode in ((f"{top}/bin/launcher", b"#!/bin/sh\n", 0o755),
                                 (f"{top}/lib/core.jar", b"core", 0o644)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), mode
            tar.addfile(info, io.BytesIO(text))
        plugin = tarfile.TarInfo(f"{top}/plugin")
        plugin.type = tarfile.DIRTYPE
        tar.addfile(plugin)
    return buf.getvalue()


def _zip(top: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{top}/trino-iceberg-476.jar", b"plugin")
    return buf.getvalue()


def _publish(repo: Path, artifact: dist.Artifact, data: bytes, sha1: str | None = None) -> None:
    path = Path(artifact.url(str(repo)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    digest = sha1 or hashlib.sha1(data, usedforsecurity=False).hexdigest()
    path.with_name(path.name + ".sha1").write_text(digest + "\n")


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", jars=JarsConfig(
        cache=tmp_path / "cache", repository=(tmp_path / "repo").as_uri() + "/"))


def _repo(tmp_path: Path, *, bad_sha1: bool = False) -> None:
    repo = tmp_path / "repo"
    _publish(repo, dist.SERVER, _tar("trino-server-core-476"), "0" * 40 if bad_sha1 else None)
    _publish(repo, dist.ICEBERG_PLUGIN, _zip("trino-iceberg-476"))


def test_artifact_names_its_maven_path() -> None:
    assert str(dist.SERVER) == "io.trino:trino-server-core:476:tar.gz"
    assert dist.ICEBERG_PLUGIN.url("https://repo1.maven.org/maven2") == (
        "https://repo1.maven.org/maven2/io/trino/trino-iceberg/476/trino-iceberg-476.zip")


def test_install_unpacks_the_server_with_the_iceberg_plugin(tmp_path: Path) -> None:
    _repo(tmp_path)
    settings = _settings(tmp_path)
    assert dist.installed(settings) is None
    home = dist.install(settings)
    assert home == dist.server_dir(settings) == dist.installed(settings)
    assert (home / "plugin" / "iceberg" / "trino-iceberg-476.jar").read_bytes() == b"plugin"
    assert os.access(home / "bin" / "launcher", os.X_OK)
    assert not list((tmp_path / "cache" / "downloads").iterdir())  # archives removed
    (tmp_path / "repo").rename(tmp_path / "gone")  # cached: no download again
    assert dist.install(settings) == home


def test_a_download_that_does_not_match_its_sha1_is_refused(tmp_path: Path) -> None:
    _repo(tmp_path, bad_sha1=True)
    settings = _settings(tmp_path)
    with pytest.raises(RuntimeSetupError, match="does not match its SHA-1"):
        dist.install(settings)
    assert dist.installed(settings) is None
    assert not list((tmp_path / "cache" / "downloads").iterdir())


def test_an_unreachable_repository_is_named(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    with pytest.raises(RuntimeSetupError, match=r"cannot download .*trino-server-core-476"):
        dist.install(settings)


def test_require_installed_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(RuntimeSetupError, match="icetide trino install"):
        dist.require_installed(_settings(tmp_path))
