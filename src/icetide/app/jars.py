"""The JVM dependencies as a user sees them: what is pinned, what is resolved where, and
which of them this configuration's sessions put on their class path (``icetide jars``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icetide.config import Settings
from icetide.runtime.classpath import cached_jars, copy_jars, resolve_into_cache
from icetide.runtime.jars import Resolved, jar_cache, load_spec, needed_groups


@dataclass(frozen=True)
class JarRow:
    """One resolved (or still missing) jar of one group."""

    group: str
    coordinate: str
    #: a coordinate of jars.toml itself, not a transitive dependency
    pinned: bool
    #: on the class path of this configuration's sessions
    used: bool
    path: str | None
    bytes: int | None


@dataclass(frozen=True)
class JarListing:
    """Where the jars come from and every row."""

    source: str
    resolved: bool
    rows: list[JarRow]


def _rows(settings: Settings, found: Resolved | None) -> list[JarRow]:
    spec, used = load_spec(), set(needed_groups(settings))
    rows: list[JarRow] = []
    for name, group in spec.groups.items():
        pinned = set(group.coordinates)
        if found is None or name not in found:
            rows.extend(JarRow(name, c, True, name in used, None, None)
                        for c in group.coordinates)
            continue
        rows.extend(JarRow(name, j.coordinate, j.coordinate in pinned, name in used,
                           str(j.path), j.path.stat().st_size) for j in found[name])
    return rows


def list_jars(settings: Settings) -> JarListing:
    """The jars as they are now; resolves nothing."""
    found = cached_jars(settings)
    source = str(settings.jars.dir) if settings.jars.dir else str(jar_cache(settings))
    return JarListing(source, found is not None, _rows(settings, found))


def resolve_jars(settings: Settings, *, force: bool = False) -> JarListing:
    """Resolve into the cache (unless already there, or ``force``) and list."""
    found = resolve_into_cache(settings, force=force)
    return JarListing(str(jar_cache(settings)), True, _rows(settings, found))


def copy_to(settings: Settings, dest: Path) -> JarListing:
    """Copy every jar into ``dest`` (with a manifest) for ``jars.dir`` on another machine."""
    found = copy_jars(settings, dest)
    return JarListing(str(dest), True, _rows(settings, found))
