"""Which jar files a process puts on its class path: from the jar cache's manifest, or from
a directory of pre-downloaded jars (``jars.dir``), resolving into the cache once when it
lacks them (as ``spark.jars.packages`` does on first use)."""

from __future__ import annotations

import fcntl
import logging
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime import ivy
from icetide.runtime.jars import (
    DIR_MANIFEST,
    JarSpec,
    Resolved,
    ResolvedJar,
    jar_cache,
    load_spec,
    manifest_path,
    needed_groups,
    read_manifest,
    write_manifest,
)

log = logging.getLogger(__name__)


def _missing_error(spec: JarSpec, groups: Sequence[str], where: str, why: str) -> RuntimeSetupError:
    coords = ", ".join(c for g in groups for c in spec.groups[g].coordinates)
    return RuntimeSetupError(
        f"missing JVM dependencies {coords} ({where}{why}): run `icetide jars resolve` "
        "where Maven Central is reachable, or set jars.dir (ICETIDE_JARS__DIR) to a "
        "directory made by `icetide jars copy DIR`")


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One resolver per cache at a time (two processes starting at once wait, not race)."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        handle = (cache / ".resolve.lock").open("a")
    except OSError as exc:
        raise RuntimeSetupError(f"cannot use the jar cache {cache}: {exc}; set jars.cache "
                                "(ICETIDE_JARS__CACHE) to a writable directory") from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def resolve_into_cache(settings: Settings, spec: JarSpec | None = None,
                       *, force: bool = False) -> Resolved:
    """The cache's manifest; resolved from ``jars.repository`` first if it lacks any jar."""
    spec = spec or load_spec()
    cache = jar_cache(settings)
    manifest = manifest_path(cache, spec)
    found = None if force else read_manifest(manifest)
    if found is not None:
        return found
    with _locked(cache):
        found = None if force else read_manifest(manifest)
        if found is None:
            try:
                found = ivy.resolve(spec, cache, settings.jars.repository)
            except RuntimeSetupError as exc:
                raise _missing_error(spec, list(spec.groups), f"not in {cache}; ",
                                     str(exc)) from exc
            write_manifest(manifest, found)
    return found


def _from_dir(directory: Path, spec: JarSpec, groups: Sequence[str]) -> Resolved:
    """A directory of jars: its ``icetide-jars.json`` (from ``icetide jars copy``), else
    every ``*.jar`` in it, provided each group's own jars are there."""
    found = read_manifest(directory / DIR_MANIFEST)
    if found is not None:
        return found
    every = tuple(ResolvedJar(p.name, p) for p in sorted(directory.glob("*.jar")))
    names = {j.path.name for j in every}
    absent = [g for g in groups
              if any(c.file_name not in names for c in spec.groups[g].parsed())]
    if absent:
        raise _missing_error(spec, absent, f"not in jars.dir {directory}", "")
    return {g: every for g in groups}


def cached_jars(settings: Settings) -> Resolved | None:
    """What is already resolved (from ``jars.dir`` or the cache), never resolving."""
    spec = load_spec()
    if settings.jars.dir is not None:
        try:
            return _from_dir(settings.jars.dir.expanduser().resolve(), spec, list(spec.groups))
        except RuntimeSetupError:
            return None
    return read_manifest(manifest_path(jar_cache(settings), spec))


def resolved_jars(settings: Settings, groups: Sequence[str] | None = None) -> Resolved:
    """The files of ``groups`` (default: every group) from ``jars.dir`` or the cache,
    resolving into the cache once if it lacks any."""
    spec = load_spec()
    if settings.jars.dir is not None:
        directory = settings.jars.dir.expanduser().resolve()
        return _from_dir(directory, spec, list(groups or spec.groups))
    return resolve_into_cache(settings, spec)


def group_jars(settings: Settings, groups: Sequence[str]) -> list[Path]:
    """The distinct files of ``groups``, in order."""
    if not groups:
        return []
    found = resolved_jars(settings, groups)
    paths: dict[Path, None] = {}
    for group in groups:
        paths.update((j.path, None) for j in found[group])
    return list(paths)


def session_jars(settings: Settings) -> list[Path]:
    """The jars a SparkSession for ``settings`` needs (:func:`needed_groups`)."""
    return group_jars(settings, needed_groups(settings))


def copy_jars(settings: Settings, dest: Path) -> Resolved:
    """Copy every resolved jar into ``dest`` with a manifest, for ``jars.dir`` elsewhere."""
    found = resolved_jars(settings)
    dest.mkdir(parents=True, exist_ok=True)
    copied: dict[str, tuple[ResolvedJar, ...]] = {}
    for group, jars in found.items():
        for jar in jars:
            if not (dest / jar.path.name).is_file():
                shutil.copy2(jar.path, dest / jar.path.name)
        copied[group] = tuple(ResolvedJar(j.coordinate, dest / j.path.name) for j in jars)
    write_manifest(dest / DIR_MANIFEST, copied, relative_to=dest)
    return copied
