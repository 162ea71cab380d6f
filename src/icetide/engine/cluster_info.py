"""Where a pipeline runs: its Spark master and executors, recorded in each commit's marker.

``icetide status`` and the dashboard read no Spark; they show the ``icetide.master`` and
``icetide.executors`` keys of a table's newest marker (written by the flow's last commit),
refreshed after every batch so a lost or added executor shows at the next commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import SparkSession

from icetide.flows.loop import BatchResult, FlowLoop
from icetide.model.keys import MarkerExtra


def executors(spark: SparkSession) -> list[str]:
    """The active executors as ``id@host:port``, in id order: on a cluster without the
    driver; with a ``local`` master the driver itself (it runs the tasks)."""
    jsc = spark.sparkContext._jsc
    if jsc is None:
        return []
    local = (spark.sparkContext.master or "").startswith("local")
    found = jsc.sc().statusStore().executorList(True)
    out = []
    for i in range(found.size()):
        summary = found.apply(i)
        if local or summary.id() != "driver":
            out.append(f"{summary.id()}@{summary.hostPort()}")
    return sorted(out, key=lambda e: (len(e.split("@")[0]), e))


def runtime_extra(spark: SparkSession) -> dict[str, str]:
    """The marker keys naming the master and the executors."""
    master = spark.sparkContext.master or ""
    return {MarkerExtra.MASTER: master, MarkerExtra.EXECUTORS: ",".join(executors(spark))}


def track_runtime(loops: Sequence[FlowLoop],
                  on_batch: Callable[[BatchResult], None] | None = None
                  ) -> Callable[[BatchResult], None]:
    """Record the runtime in every loop's markers now and after each batch of any of them
    (chaining ``on_batch``): pass the result as the run's ``on_batch``."""

    def refresh() -> None:
        extra = runtime_extra(loops[0].spark) if loops else {}
        for loop in loops:
            loop.summary_extra.update(extra)

    refresh()

    def refreshed(result: BatchResult) -> None:
        refresh()
        if on_batch is not None:
            on_batch(result)

    return refreshed
