"""A Spark Python task does not re-read the worker's archives (icetide.runtime.pydaemon)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from icetide.runtime import pydaemon


def _in_a_task(_: int) -> tuple[list[str], list[str]]:
    import importlib
    import sys
    import zipimport

    zips = {p: f for p, f in sys.path_importer_cache.items()
            if isinstance(f, zipimport.zipimporter)}
    before = {p: id(zipimport._zip_directory_cache.get(f.archive))  # type: ignore[attr-defined]
              for p, f in zips.items()}
    importlib.invalidate_caches()  # what pyspark.worker does before every task
    reread = [p for p, f in zips.items()
              if id(zipimport._zip_directory_cache.get(f.archive)) != before[p]]  # type: ignore[attr-defined]
    return [type(f).__name__ for f in zips.values()], reread


def test_the_daemon_module_keeps_archives_cached_across_tasks(spark: SparkSession) -> None:
    assert spark.conf.get("spark.python.daemon.module") == pydaemon.MODULE
    kinds, reread = spark.sparkContext.parallelize([0], 1).map(_in_a_task).collect()[0]
    assert kinds and set(kinds) == {"ArchiveImporter"}  # pyspark.zip, py4j's zip, the jar
    assert reread == []
