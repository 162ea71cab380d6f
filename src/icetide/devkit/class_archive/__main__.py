"""``python -m icetide.devkit.class_archive SPEC``: the archiving JVM's process (started by
:func:`icetide.devkit.class_archive.build.build_archive`). SPEC is a JSON file:
``{"home": ..., "jars": [...], "java_options": ...}``. Exits when the driver JVM has
exited, i.e. when its archive is written."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from icetide.devkit.class_archive.workload import run_workload


def _wait_for_jvm(timeout: float = 300.0) -> int | None:
    """Close the driver JVM's stdin (it exits on EOF, writing its archive) and wait."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return None
    gateway.shutdown()
    if proc.stdin is not None:
        proc.stdin.close()
    return int(proc.wait(timeout=timeout))


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    spec = json.loads(Path(argv[1]).read_text())
    run_workload(Path(spec["home"]), [Path(j) for j in spec["jars"]], spec["java_options"])
    code = _wait_for_jvm()
    logging.getLogger(__name__).info("driver JVM exited with %s", code)
    return 0 if code in (0, None) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
