"""Stop the metastore services that tests started under the pytest temp folder."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.runtime.catalogs import catalog_conf
from icetide.runtime.local_server import pid_alive, terminate

_DEPTHS = ("*", "*/*", "*/*/*", "*/*/*/*")
#: Ports of services that session fixtures keep for every test (never stopped per test).
KEEP: set[int] = set()


def stop_metastores_under(root: Path) -> int:
    """Stop every service whose home is under ``root``, but those on a port in :data:`KEEP`."""
    stopped = 0
    for depth in _DEPTHS:
        for state in root.glob(f"{depth}/metastore/service.json"):
            try:
                data = json.loads(state.read_text())
            except (OSError, ValueError):
                continue
            if int(data.get("port", -1)) in KEEP or not pid_alive(int(data["pid"])):
                continue
            terminate(int(data["pid"]))
            state.unlink(missing_ok=True)
            stopped += 1
    return stopped


def register_catalog(spark: SparkSession, settings: Settings) -> None:
    """Make ``settings``' catalog (its name and URI) a catalog of the running session."""
    prefix = f"spark.sql.catalog.{settings.catalog.name}"
    for key, value in catalog_conf(settings).items():
        if key.startswith(prefix):
            spark.conf.set(key, value)
