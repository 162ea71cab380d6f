"""The JVM dependencies icetide puts on Spark's class path, by Maven coordinates.

The one pinned list is ``jars.toml`` beside this module: groups of coordinates
(``iceberg``, ``kafka``, ``aws``, ``postgres``). :mod:`icetide.runtime.ivy` resolves them
with their transitive dependencies from a Maven repository into the jar cache (once, at
install: ``icetide jars resolve``) and records the files in a manifest; every later
process only reads that manifest — a run after install needs no network. Air-gapped and
cluster users point ``jars.dir`` at a directory made by ``icetide jars copy DIR``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.s3 import uses_s3

log = logging.getLogger(__name__)

SPEC_FILE = Path(__file__).with_name("jars.toml")
#: the manifest ``icetide jars copy`` writes beside the copied jars
DIR_MANIFEST = "icetide-jars.json"
ALWAYS = ("iceberg", "kafka")
_COORDINATE = re.compile(r"^([\w.\-]+):([\w.\-]+):([\w.\-]+)$")


@dataclass(frozen=True, order=True)
class Coordinate:
    """``group:artifact:version`` of one Maven artifact (a jar)."""

    group: str
    artifact: str
    version: str

    @classmethod
    def parse(cls, text: str) -> Coordinate:
        match = _COORDINATE.match(text.strip())
        if match is None:
            raise RuntimeSetupError(
                f"{text!r} in {SPEC_FILE} is not a Maven coordinate: write group:artifact:version"
            )
        return cls(*match.groups())

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


class JarGroup(BaseModel):
    """One purpose's coordinates (their transitive dependencies come with them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    why: str
    coordinates: tuple[str, ...]
    #: ``group:artifact`` of transitive dependencies to leave out
    exclude: tuple[str, ...] = ()
    #: "spark": jars for Spark's class path (pyspark's own jars are left out); "own": a
    #: program in a JVM of its own (e.g. the embedded Kafka broker), resolved whole
    jvm: Literal["spark", "own"] = "spark"

    def parsed(self) -> tuple[Coordinate, ...]:
        return tuple(Coordinate.parse(c) for c in self.coordinates)


class JarSpec(BaseModel):
    """The pinned list: ``jars.toml`` as a typed model."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    groups: dict[str, JarGroup]

    def key(self) -> str:
        """A hash of the list and of pyspark's jars (what the resolution excludes)."""
        digest = hashlib.sha256(self.model_dump_json().encode())
        digest.update("|".join(sorted(p.name for p in pyspark_jars_dir().glob("*.jar"))).encode())
        return digest.hexdigest()[:16]


def load_spec(path: Path = SPEC_FILE) -> JarSpec:
    """The pinned coordinates, validated."""
    try:
        spec = JarSpec.model_validate(tomllib.loads(path.read_text()))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise RuntimeSetupError(f"cannot read the JVM dependency list {path}: {exc}") from exc
    for group in spec.groups.values():
        group.parsed()
    return spec


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeSetupError(f"Python package {module!r} is not installed: pip install icetide")
    return Path(spec.origin).parent


def pyspark_jars_dir() -> Path:
    """The ``jars/`` directory of the installed pyspark (Spark's own class path)."""
    return _package_dir("pyspark") / "jars"


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/icetide/jars`` (``~/.cache/icetide/jars``): shared by every home,
    as Maven's ``~/.m2`` and Ivy's ``~/.ivy2`` are."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "icetide" / "jars"


def jar_cache(settings: Settings) -> Path:
    """Where resolved jars live: ``jars.cache`` or :func:`default_cache`."""
    return (settings.jars.cache or default_cache()).expanduser().resolve()


def needed_groups(settings: Settings) -> tuple[str, ...]:
    """The groups a SparkSession for ``settings`` puts on its class path."""
    groups = list(ALWAYS)
    if uses_s3(settings):
        groups.append("aws")
    if settings.catalog.type == "jdbc":
        groups.append("postgres")
    if settings.spark.hudi:
        groups.append("hudi")
    return tuple(groups)


@dataclass(frozen=True)
class ResolvedJar:
    """One resolved file and the coordinate it is (a group's own or a transitive one)."""

    coordinate: str
    path: Path


Resolved = dict[str, tuple[ResolvedJar, ...]]


def manifest_path(cache: Path, spec: JarSpec) -> Path:
    return cache / f"resolved-{spec.key()}.json"


def write_manifest(path: Path, resolved: Resolved, relative_to: Path | None = None) -> None:
    """Write ``resolved`` atomically (paths relative to ``relative_to`` when given)."""

    def shown(p: Path) -> str:
        return str(p.relative_to(relative_to)) if relative_to else str(p)

    doc = {group: [{"coordinate": j.coordinate, "path": shown(j.path)} for j in jars]
           for group, jars in resolved.items()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"groups": doc}, indent=2) + "\n")
    os.replace(tmp, path)


def read_manifest(path: Path) -> Resolved | None:
    """The manifest at ``path``; None if absent, unreadable or naming a missing file."""
    try:
        doc = json.loads(path.read_text())["groups"]
        resolved = {
            group: tuple(ResolvedJar(j["coordinate"], path.parent / j["path"]) for j in jars)
            for group, jars in doc.items()
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(j.path.is_file() for jars in resolved.values() for j in jars):
        return None
    return resolved
