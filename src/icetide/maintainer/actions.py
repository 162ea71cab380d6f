"""The maintenance steps on Spark: Iceberg's procedures (``CALL``) and, where the exact
time matters (expiry, orphans), the Java actions behind them.

Every step that commits retries a conflict with a concurrent writer a few times and then
yields (the pass records it as skipped): the writer's commit always wins.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar

from tenacity import stop_after_attempt, wait_incrementing

from icetide.lake.commit import is_commit_conflict
from icetide.maintainer.report import OrphanSweep, RewriteCounts
from icetide.runtime.retry import Failure, retrying
from icetide.runtime.s3 import on_s3
from icetide.tables.procedures import call_sql
from icetide.tables.sql import split_qualified

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")

#: Tries of one step that conflicts with a writer before the pass yields it.
CONFLICT_TRIES = 3


class Yielded(Exception):
    """A step gave way to a concurrent writer (conflicts ``CONFLICT_TRIES`` times)."""


def retry_conflicts(step: str, fn: Callable[[], T], delay: float = 1.0) -> T:
    """``fn()``; on a commit conflict with a writer try again (after ``delay``, then twice
    that...), ``CONFLICT_TRIES`` tries in all, then raise :class:`Yielded`."""

    def on_retry(failure: Failure, wait: float) -> None:
        log.info("%s conflicted with a writer (try %d of %d)", step, failure.attempts,
                 CONFLICT_TRIES)

    retry = retrying(is_commit_conflict, wait=wait_incrementing(delay, delay),
                     stop=stop_after_attempt(CONFLICT_TRIES), on_retry=on_retry,
                     give_up=lambda failure: Yielded(
                         f"{step}: gave way to concurrent writers {CONFLICT_TRIES} times"))
    return retry(fn)


class Steps:
    """Runs the steps of one pass: each one timed and logged; one that gave way to a
    writer (:class:`Yielded`) is recorded as skipped, with why."""

    def __init__(self, ident: str, dry_run: bool) -> None:
        self.ident = ident
        self.dry_run = dry_run
        self.skipped: dict[str, str] = {}
        self.seconds: dict[str, float] = {}

    def run(self, name: str, step: Callable[[], R | None]) -> R | None:
        log.info("%s of %s: starting%s", name, self.ident, " (dry run)" * self.dry_run)
        began = time.monotonic()
        try:
            return step()
        except Yielded as exc:
            self.skipped[name] = str(exc)
            return None
        finally:
            self.seconds[name] = round(time.monotonic() - began, 3)


def _call(spark: SparkSession, catalog: str, name: str, args: dict[str, object]
          ) -> dict[str, object]:
    rows = spark.sql(call_sql(catalog, name, args)).collect()
    return rows[0].asDict() if rows else {}


def _in_catalog(ident: str) -> str:
    """``catalog.db.table`` → ``db.table`` (the ``table`` argument of a procedure)."""
    return ".".join(split_qualified(ident)[1:])


def rewrite_data_files(spark: SparkSession, ident: str, strategy: str,
                       sort_order: str | None, options: dict[str, str]) -> RewriteCounts:
    args: dict[str, object] = {"table": _in_catalog(ident), "strategy": strategy,
                               "options": options}
    if sort_order:
        args["sort_order"] = sort_order
    return RewriteCounts.of_row(_call(
        spark, split_qualified(ident)[0], "rewrite_data_files", args))


def rewrite_position_deletes(spark: SparkSession, ident: str,
                             options: dict[str, str]) -> RewriteCounts:
    return RewriteCounts.of_row(_call(
        spark, split_qualified(ident)[0], "rewrite_position_delete_files",
        {"table": _in_catalog(ident), "options": options}))


def rewrite_manifests(spark: SparkSession, ident: str) -> RewriteCounts:
    return RewriteCounts.of_row(_call(
        spark, split_qualified(ident)[0], "rewrite_manifests", {"table": _in_catalog(ident)}))


def _actions(spark: SparkSession) -> JavaObject:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession)


def expire_snapshots(table: JavaObject, older_than_ms: int, retain_last: int) -> None:
    """Expire snapshots older than ``older_than_ms`` (epoch ms), keeping ``retain_last``.

    Iceberg's core API, not the Spark action: on a table whose history is one line (a
    pipeline's), it reads only the expired snapshots' manifests on the driver to find the
    files they alone held. The Spark action lists every file reachable from the table
    before and after, as Spark jobs, on every pass: many times slower on a pipeline's
    table (docs/benchmarks-history.md, "The figures behind the code's settings")."""
    (table.expireSnapshots().expireOlderThan(older_than_ms).retainLast(retain_last)
     .cleanExpiredFiles(True).commit())


class _KeepFiles:
    """A ``java.util.function.Consumer`` that deletes nothing (dry runs)."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def accept(self, path: str) -> None:
        self.paths.append(str(path))

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Consumer"]


def remove_orphans(spark: SparkSession, table: JavaObject, older_than_ms: int, dry_run: bool
                   ) -> OrphanSweep:
    """Delete (dry: list) files under the table that no snapshot references and that are
    older than ``older_than_ms``. The Java action, as ``CALL`` refuses ages < 24 h. On
    object storage it lists objects by prefix through the table's FileIO (S3FileIO), not
    through a Hadoop file system the session does not have."""
    action = _actions(spark).deleteOrphanFiles(table).olderThan(older_than_ms)
    if on_s3(str(table.location())):
        action = action.usePrefixListing(True)
    keep = _KeepFiles()
    if dry_run:
        from pyspark.java_gateway import ensure_callback_server_started

        gateway = spark.sparkContext._gateway
        assert gateway is not None
        ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
        action = action.deleteWith(keep)
    result = action.execute()
    files = [str(p) for p in result.orphanFileLocations()]
    return OrphanSweep(len(files), tuple(files[:5]), older_than_ms)
