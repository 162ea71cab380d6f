"""The jars Spark needs for Iceberg, found in installed Python packages and built once.

* ``iceberg-spark-runtime-3.5_<scala>-<version>.jar`` from the PyPI package
  ``snowpark-connect-deps-iceberg``;
* its missing shaded Jackson, relocated from pyspark's own ``jackson-*.jar``;
* optionally its missing shaded Apache HttpClient 5 (REST catalog only), relocated from the
  Debian ``libhttpclient5-java`` / ``libhttpcore5-java`` jars when they are installed.

Built jars are cached under a file name keyed by a hash of their inputs, so a changed input
builds a new jar and concurrent builders cannot see half-written files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.relocate import Relocation, relocate_jars

#: The PostgreSQL JDBC driver from Debian's libpostgresql-jdbc-java.
POSTGRES_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
log = logging.getLogger(__name__)

JAR_CACHE_ENV = "ICETIDE_JAR_CACHE"
RELOCATOR_VERSION = "1"
SHADED_PREFIX = "org.apache.iceberg.shaded."
JACKSON_ARTIFACTS = (
    "jackson-core",
    "jackson-databind",
    "jackson-annotations",
    "jackson-datatype-jsr310",
)
JACKSON_RELOCATION = Relocation("com.fasterxml.jackson", SHADED_PREFIX + "com.fasterxml.jackson")
HTTPCLIENT_RELOCATION = Relocation("org.apache.hc", SHADED_PREFIX + "org.apache.hc")
SYSTEM_JAVA_DIR = Path("/usr/share/java")
# Debian file names; httpcore5-h2 is optional (HTTP/2), the other two are required.
HTTPCLIENT_JARS = ("httpclient5.jar", "httpcore5.jar", "httpcore5-h2.jar")
_INSTALL_HINT = "pip install pyspark==3.5.9 snowpark-connect-deps-iceberg==1.0.3"


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeSetupError(f"Python package {module!r} is not installed: {_INSTALL_HINT}")
    return Path(spec.origin).parent


def pyspark_jars_dir() -> Path:
    """The ``jars/`` directory of the installed pyspark."""
    return _package_dir("pyspark") / "jars"


def scala_binary_version() -> str:
    """The Scala binary version pyspark was built with (``2.12`` for pyspark 3.5 on PyPI)."""
    for jar in pyspark_jars_dir().glob("scala-library-*.jar"):
        match = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if match:
            return match.group(1)
    raise RuntimeSetupError(
        f"no scala-library-*.jar in {pyspark_jars_dir()}: reinstall pyspark ({_INSTALL_HINT})"
    )


def runtime_jar() -> Path:
    """The Iceberg Spark 3.5 runtime jar matching pyspark's Scala version."""
    jars = _package_dir("snowpark_connect_deps_iceberg") / "jars"
    pattern = f"iceberg-spark-runtime-3.5_{scala_binary_version()}-*.jar"
    found = sorted(jars.glob(pattern))
    if not found:
        raise RuntimeSetupError(f"no {pattern} in {jars}: reinstall with {_INSTALL_HINT}")
    return found[-1]


def jackson_jars() -> list[Path]:
    """pyspark's Jackson jars that become the runtime jar's shaded Jackson."""
    jars_dir = pyspark_jars_dir()
    out = []
    for artifact in JACKSON_ARTIFACTS:
        found = sorted(jars_dir.glob(f"{artifact}-[0-9]*.jar"))
        if not found:
            raise RuntimeSetupError(
                f"{artifact}-*.jar not found in {jars_dir}: reinstall pyspark ({_INSTALL_HINT})"
            )
        out.append(found[-1])
    return out


def httpclient_jars(java_dir: Path = SYSTEM_JAVA_DIR) -> list[Path]:
    """Debian's HttpClient 5 jars, or ``[]`` unless both client and core are installed."""
    found = [java_dir / name for name in HTTPCLIENT_JARS if (java_dir / name).is_file()]
    names = {p.name for p in found}
    return found if {"httpclient5.jar", "httpcore5.jar"} <= names else []


def default_jar_cache(settings: Settings) -> Path:
    """``$ICETIDE_JAR_CACHE`` (shared across homes, e.g. ``~/.cache/icetide/jars``) or
    ``<home>/cache/jars``."""
    env = os.environ.get(JAR_CACHE_ENV)
    return Path(env).expanduser() if env else settings.path("cache", "jars")


def _inputs_key(sources: Sequence[Path], relocations: Sequence[Relocation]) -> str:
    digest = hashlib.sha256(f"relocator-v{RELOCATOR_VERSION}".encode())
    for reloc in relocations:
        digest.update(f"|{reloc.source}->{reloc.target}".encode())
    for source in sources:
        digest.update(f"|{source.name}|".encode())
        digest.update(hashlib.sha256(source.read_bytes()).digest())
    return digest.hexdigest()[:16]


def build_relocated_jar(
    stem: str, sources: Sequence[Path], relocations: Sequence[Relocation], cache_dir: Path
) -> Path:
    """Return ``<cache_dir>/<stem>-<inputs hash>.jar``, building it first if needed."""
    dest = cache_dir / f"{stem}-{_inputs_key(sources, relocations)}.jar"
    if dest.is_file():
        log.debug("using cached %s", dest)
        return dest
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RuntimeSetupError(
            f"cannot create jar cache directory {cache_dir}: {exc}; "
            f"set {JAR_CACHE_ENV} to a writable directory"
        ) from exc
    started = time.perf_counter()
    stats = relocate_jars(sources, relocations, dest)
    log.info(
        "built %s (%d classes) in %.2fs", dest.name, stats.classes, time.perf_counter() - started
    )
    return dest


def _jackson_stem(sources: Sequence[Path]) -> str:
    match = re.search(r"-(\d[\w.]*)\.jar$", sources[0].name)
    return "iceberg-shaded-jackson" + (f"-{match.group(1)}" if match else "")


def ensure_jars(cache_dir: Path, java_dir: Path = SYSTEM_JAVA_DIR) -> list[Path]:
    """The jars to put on ``spark.jars`` and the driver class path for Iceberg.

    Returns the runtime jar, the relocated Jackson jar and, when Debian's HttpClient 5 jars
    are installed in ``java_dir``, a relocated HttpClient jar (needed by the REST catalog).
    """
    jars = [runtime_jar()]
    jackson = jackson_jars()
    stem = _jackson_stem(jackson)
    jars.append(build_relocated_jar(stem, jackson, [JACKSON_RELOCATION], cache_dir))
    http = httpclient_jars(java_dir)
    if http:
        stem = "iceberg-shaded-httpclient5"
        jars.append(build_relocated_jar(stem, http, [HTTPCLIENT_RELOCATION], cache_dir))
    else:
        log.debug("no HttpClient 5 jars in %s: the REST catalog client will not load", java_dir)
    return jars
