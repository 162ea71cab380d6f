"""``icetide jars archive``: build the driver JVM's class-data-sharing archive for this
configuration's class path (:mod:`icetide.runtime.cds`).

A child process runs :mod:`icetide.devkit.class_archive.workload` in a private home
with ``-XX:ArchiveClassesAtExit``; when its JVM has exited, the archive written under a
temporary name is renamed into place (two builds at once cannot leave half a file).
The child's environment has no ``ICETIDE_*`` variable: it never reaches the user's
catalog, broker or home.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from icetide.config import ENV_PREFIX, Settings, SparkConfig
from icetide.errors import RuntimeSetupError
from icetide.runtime.cds import archive_path, dump_options
from icetide.runtime.classpath import session_jars
from icetide.runtime.jars import jar_cache
from icetide.runtime.java import check_java
from icetide.runtime.session import driver_java_options

log = logging.getLogger(__name__)

#: The archiving run's output, kept beside the archives for a failed build.
BUILD_LOG = "build.log"


@dataclass(frozen=True)
class ArchiveReport:
    """The archive of this configuration's class path: where, how big, whether built now."""

    path: str
    built: bool
    bytes: int
    seconds: float
    jars: int


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}


def _run_child(spec: Mapping[str, object], tmp: Path, out: Path) -> None:
    (tmp / "spec.json").write_text(json.dumps(spec))
    cmd = [sys.executable, "-m", "icetide.devkit.class_archive", str(tmp / "spec.json")]
    with out.open("wb") as log_file:
        try:
            done = subprocess.run(cmd, env=_child_env(), stdout=log_file,
                                  stderr=subprocess.STDOUT, timeout=900, check=False)
        except subprocess.TimeoutExpired as exc:
            raise RuntimeSetupError(f"building the class archive took over {exc.timeout:.0f}s; "
                                    f"its log: {out}") from exc
    if done.returncode != 0:
        tail = out.read_text(errors="replace")[-2000:]
        raise RuntimeSetupError(f"building the class archive failed (exit {done.returncode}); "
                                f"its log: {out}\n{tail}")


def build_archive(settings: Settings, *, force: bool = False,
                  announce: Callable[[Path, Path], None] | None = None) -> ArchiveReport:
    """The archive for ``settings``' driver class path, built unless it exists (``force``:
    built again); ``announce(archive, log)`` before a build starts."""
    started = time.monotonic()
    java, jars = check_java(), session_jars(settings)
    target = archive_path(jar_cache(settings), java, jars)
    if target.is_file() and not force:
        return ArchiveReport(str(target), False, target.stat().st_size, 0.0, len(jars))
    target.parent.mkdir(parents=True, exist_ok=True)
    dump = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    base = SparkConfig()  # the workload's session: the defaults on this machine
    options = driver_java_options(base.master, None, base.driver_memory, dump_options(dump))
    log.info("building the class archive %s (about a minute)", target)
    if announce is not None:
        announce(target, target.parent / BUILD_LOG)
    try:
        with tempfile.TemporaryDirectory(prefix="icetide-cds-") as tmp:
            home = Path(tmp) / "home"
            home.mkdir()
            spec = {"home": str(home), "jars": [str(j) for j in jars], "java_options": options}
            _run_child(spec, Path(tmp), target.parent / BUILD_LOG)
        if not dump.is_file():
            raise RuntimeSetupError(f"the archiving JVM wrote no archive; its log: "
                                    f"{target.parent / BUILD_LOG}")
        os.replace(dump, target)
    finally:
        dump.unlink(missing_ok=True)
    return ArchiveReport(str(target), True, target.stat().st_size,
                         round(time.monotonic() - started, 1), len(jars))
