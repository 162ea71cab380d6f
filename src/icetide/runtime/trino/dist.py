"""Trino's server, by Maven coordinates, unpacked once into the jar cache.

Not the 821 MB ``io.trino:trino-server:476:tar.gz`` (every connector) but its core,
``io.trino:trino-server-core:476:tar.gz`` (194 MB), plus the one plugin icetide needs,
``io.trino:trino-iceberg:476:zip`` (346 MB), unpacked as ``plugin/iceberg`` — the layout
of the full archive. Both come from ``jars.repository`` (Maven Central), each checked
against the repository's SHA-1 before it is unpacked; ``icetide trino install`` (run by
``make install-test``) does it, a start on a machine without it does it first. Measured:
docs/stack.md, "Trino".
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import jar_cache

log = logging.getLogger(__name__)

VERSION = "476"
#: the file a complete unpacked server has (written last)
COMPLETE = ".icetide-complete"
READ_TIMEOUT_S = 60.0
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Artifact:
    """``group:artifact:version:ext`` of one Maven artifact that is not a jar."""

    group: str
    artifact: str
    version: str
    ext: str

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.{self.ext}"

    def url(self, repository: str) -> str:
        root = repository if repository.endswith("/") else repository + "/"
        return (f"{root}{self.group.replace('.', '/')}/{self.artifact}/{self.version}/"
                f"{self.file_name}")

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}:{self.ext}"


SERVER = Artifact("io.trino", "trino-server-core", VERSION, "tar.gz")
ICEBERG_PLUGIN = Artifact("io.trino", "trino-iceberg", VERSION, "zip")


def server_dir(settings: Settings) -> Path:
    """Where the unpacked server lives: ``<jar cache>/trino-server-<version>``."""
    return jar_cache(settings) / f"trino-server-{VERSION}"


def installed(settings: Settings) -> Path | None:
    """The unpacked server, if it is complete."""
    home = server_dir(settings)
    return home if (home / COMPLETE).is_file() else None


def require_installed(settings: Settings) -> Path:
    """The unpacked server, or an error saying how to get it (nothing is downloaded)."""
    home = installed(settings)
    if home is None:
        raise RuntimeSetupError(
            f"Trino {VERSION} is not in {server_dir(settings).parent}: run `icetide trino "
            "install` (make install-test does) where Maven Central is reachable")
    return home


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".trino.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def install(settings: Settings) -> Path:
    """The unpacked server, downloaded and unpacked first when the cache lacks it."""
    found = installed(settings)
    if found is not None:
        return found
    cache = jar_cache(settings)
    with _locked(cache):
        found = installed(settings)
        if found is not None:
            return found
        began = time.perf_counter()
        downloads = cache / "downloads"
        server = download(SERVER, settings.jars.repository, downloads)
        plugin = download(ICEBERG_PLUGIN, settings.jars.repository, downloads)
        home = unpack(server, plugin, server_dir(settings))
        server.unlink()
        plugin.unlink()
        log.info("Trino %s installed in %s (%.1f s)", VERSION, home,
                 time.perf_counter() - began)
        return home


def _fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT_S) as resp:
            return bytes(resp.read())
    except (urllib.error.URLError, OSError) as exc:
        raise RuntimeSetupError(f"cannot download {url}: {getattr(exc, 'reason', exc)}; set "
                                "jars.repository to a reachable Maven mirror") from exc


def download(artifact: Artifact, repository: str, dest_dir: Path) -> Path:
    """``artifact`` into ``dest_dir``, its SHA-1 checked against the repository's."""
    url = artifact.url(repository)
    expected = _fetch(url + ".sha1").decode().split()[0].strip().lower()
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / artifact.file_name
    part = dest.with_name(dest.name + ".part")
    digest = hashlib.sha1(usedforsecurity=False)
    began = time.perf_counter()
    log.info("downloading %s from %s", artifact, url)
    try:
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT_S) as resp, part.open("wb") as out:
            while chunk := resp.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as exc:
        part.unlink(missing_ok=True)
        raise RuntimeSetupError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from exc
    if digest.hexdigest() != expected:
        part.unlink()
        raise RuntimeSetupError(f"{url} does not match its SHA-1 ({digest.hexdigest()} != "
                                f"{expected}): a broken download or mirror; run it again")
    os.replace(part, dest)
    log.info("downloaded %s (%.0f MB) in %.1f s", artifact, dest.stat().st_size / 1e6,
             time.perf_counter() - began)
    return dest


def _single_top(names: list[str], archive: Path) -> str:
    tops = {n.split("/", 1)[0] for n in names if n.strip("/")}
    if len(tops) != 1:
        raise RuntimeSetupError(f"{archive} has {len(tops)} top-level entries, not one "
                                "directory: not a Trino archive")
    return tops.pop()


def unpack(server: Path, plugin: Path, dest: Path) -> Path:
    """The server archive at ``dest`` with the plugin zip as ``plugin/iceberg``."""
    work = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with tarfile.open(server) as tar:
        top = _single_top(tar.getnames(), server)
        tar.extractall(work, filter="data")
    root = work / top
    if not (root / "bin" / "launcher").is_file():
        raise RuntimeSetupError(f"{server} has no bin/launcher: not a Trino server archive")
    with zipfile.ZipFile(plugin) as zf:
        plugin_top = _single_top(zf.namelist(), plugin)
        zf.extractall(work)
    os.replace(work / plugin_top, root / "plugin" / "iceberg")
    (root / COMPLETE).write_text(f"{SERVER}\n{ICEBERG_PLUGIN}\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(root, dest)
    shutil.rmtree(work, ignore_errors=True)
    return dest
