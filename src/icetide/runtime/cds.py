"""The driver JVM's class-data-sharing archive (AppCDS): Spark, Iceberg, Hive client and
Kafka classes parsed and verified once, mapped by every later JVM instead of loaded again.

A Spark driver loads ~20,000 classes from ~300 jars before its first commit; on 2 cores
that is seconds of every start, and a restart after kill -9 is not fresh until it is
done. ``icetide jars archive`` (run by ``make install``) runs a small pipeline once in a
JVM started with ``-XX:ArchiveClassesAtExit`` (JDK 13+ dynamic archive); a session whose
Java and class path are the archive's adds ``-XX:SharedArchiveFile`` to the driver's
options (:func:`shared_archive_options`). Measured on 2 cores: session start, first DDL,
an Iceberg write and a read 11.2–13.4 s → 6.4 s (docs/stack.md).

An archive is valid only for the exact JVM build and class path it was dumped with (the
JVM checks every jar's size and time): its file name is a hash of both (:func:`archive_key`),
so a changed jar, Java or pyspark simply finds no archive, and the session starts as it
would without one. The JVM's own check stays as a second guard; its CDS log lines are
turned off so a mismatch never clutters a run's output.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from icetide.runtime.java import JavaInfo

log = logging.getLogger(__name__)

#: Inside the jar cache (archives belong to its jars).
ARCHIVE_DIR = "cds"
#: The JVM says nothing about CDS (a mismatched archive is just not used).
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def _spark_jars() -> Path:
    import pyspark  # the wheel's jars are on every driver's class path

    return Path(pyspark.__file__).resolve().parent / "jars"


def _stat(path: Path) -> list[str | int]:
    st = path.stat()
    return [str(path), st.st_size, st.st_mtime_ns]


def archive_key(java: JavaInfo, jars: Sequence[Path], spark_jars: Path | None = None) -> str:
    """A hash of the JVM build and the driver's whole class path (icetide's jars in order,
    then the pyspark wheel's), each jar by path, size and modification time."""
    wheel = spark_jars or _spark_jars()
    what = {
        "java": [str(java.executable.resolve()), java.version],
        "jars": [_stat(j) for j in jars],
        "spark": [_stat(j) for j in sorted(wheel.glob("*.jar"))],
    }
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:24]


def archive_path(cache: Path, java: JavaInfo, jars: Sequence[Path],
                 spark_jars: Path | None = None) -> Path:
    """Where the archive of this JVM and class path is (or would be) in ``cache``."""
    return cache / ARCHIVE_DIR / f"driver-{archive_key(java, jars, spark_jars)}.jsa"


def shared_archive_options(cache: Path, java: JavaInfo, jars: Sequence[Path]) -> list[str]:
    """The driver JVM's options that map this class path's archive; none without one."""
    try:
        archive = archive_path(cache, java, jars)
    except OSError as exc:  # a jar gone: the session will say so itself
        log.debug("no class archive: %s", exc)
        return []
    if not archive.is_file():
        log.debug("no class archive %s (build one: icetide jars archive)", archive)
        return []
    return [f"-XX:SharedArchiveFile={archive}", *QUIET]


def dump_options(target: Path) -> list[str]:
    """The options of a JVM that writes its loaded classes to ``target`` when it exits."""
    return [f"-XX:ArchiveClassesAtExit={target}", *QUIET]
