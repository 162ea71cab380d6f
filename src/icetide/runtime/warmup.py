"""Python workers started before the first batch needs them.

A new SparkSession has no Python worker: the first task running Python (a Kafka batch's
``mapInArrow``) starts Spark's worker daemon, forks a worker per task slot and imports
what the task's function needs, all on the first batch's clock. :func:`warm_python_workers`
runs one tiny ``mapInArrow`` job (the same kind of worker: Arrow, SQL) with a task per
slot in a background thread, importing the given modules in each worker; Spark keeps
the workers (``spark.python.worker.reuse``), so the first batch finds them started,
while the driver compiles the flows meanwhile.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: The Spark FAIR pool of the warm-up job (sorts after every flow's pool).
POOL = "warmup"


def _import(modules: Sequence[str], batches: Iterator[pa.RecordBatch]
            ) -> Iterator[pa.RecordBatch]:
    for name in modules:  # a worker without the module fails later, with the batch
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    yield from batches


def _run(spark: SparkSession, modules: Sequence[str]) -> None:
    from icetide.runtime.startup import phase

    slots = max(1, spark.sparkContext.defaultParallelism)
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", POOL)
    try:
        (spark.range(slots, numPartitions=slots)
         .mapInArrow(functools.partial(_import, tuple(modules)), "id long")
         .collect())
    except Exception as exc:  # a warm-up only: the batches start their workers anyway
        log.warning("could not start the Python workers ahead of the first batch: %s", exc)
        return
    phase("python_workers")


def warm_python_workers(spark: SparkSession, modules: Sequence[str] = ()) -> threading.Thread:
    """Start the session's Python workers in the background, importing ``modules``."""
    thread = threading.Thread(target=_run, args=(spark, modules), name="warm-python-workers",
                              daemon=True)
    thread.start()
    return thread
