"""Spark's Python worker daemon (``spark.python.daemon.module``), with archives that are
re-read only when they change.

Every Python task (the Kafka reader's ``mapInArrow``) starts with
``importlib.invalidate_caches()`` in ``pyspark.worker``. On Python 3.10 and 3.11 that
makes each ``zipimport.zipimporter`` re-read its archive's whole directory at once —
and a PySpark worker's path holds three archives: ``pyspark.zip``, py4j's zip and the
``spark-core`` jar. That is tens of milliseconds of CPU per task, every task (CPython
gh-103200, made lazy in 3.12; Spark skips the call when the path did not change from
SPARK-54744 on, after the 3.5 line). This module runs ``pyspark.daemon`` unchanged
after swapping the daemon's zip importers for :class:`ArchiveImporter`, which re-reads
an archive only when its size or modification time changed: forked workers inherit
them, and an archive that is replaced (a new ``--py-files`` zip) is still read afresh.

Executors import icetide anyway (the Kafka reader runs in them, docs/deploy.md), so the
module is there wherever a worker starts.
"""

from __future__ import annotations

import os
import sys
import zipimport

#: The conf value naming this module.
MODULE = "icetide.runtime.pydaemon"

_Stamp = tuple[int, int] | None


def _stamp(archive: str) -> _Stamp:
    try:
        st = os.stat(archive)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class ArchiveImporter(zipimport.zipimporter):
    """A zip importer whose :meth:`invalidate_caches` re-reads the archive's directory
    only when the file changed since it was last read."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._stamp = _stamp(self.archive)

    def invalidate_caches(self) -> None:
        stamp = _stamp(self.archive)
        if stamp is not None and stamp == self._stamp:
            return
        super().invalidate_caches()
        self._stamp = stamp


def install() -> None:
    """Use :class:`ArchiveImporter` for this process's archives, cached and to come."""
    hooks = sys.path_hooks
    for i, hook in enumerate(hooks):
        if hook is zipimport.zipimporter:
            hooks[i] = ArchiveImporter
    cache = sys.path_importer_cache
    for path, finder in list(cache.items()):
        if type(finder) is zipimport.zipimporter:
            cache[path] = ArchiveImporter(path)


if __name__ == "__main__":
    install()
    from pyspark.daemon import manager

    manager()  # type: ignore[no-untyped-call]
