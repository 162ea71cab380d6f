"""Commit rows and a marker in ONE Iceberg commit, and read markers back (JVM side).

* Appends use the DataFrameWriterV2 option ``snapshot-property.<key>``.
* SQL (MERGE/UPDATE/DELETE) runs inside ``CommitMetadata.withCommitProperties`` through
  a py4j callback, which is the only way Spark 3.5 + Iceberg 1.12 (runtime/jars.toml)
  attach properties to a row-level commit (docs/stack.md).
* Markers are read from the Java ``Table`` by walking the current snapshot's ancestors,
  so a rolled-back branch never counts.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from icetide.lake import hudi
from icetide.lake.metadata import TableMetadata, metadata_of
from icetide.model.keys import MarkerKeys
from icetide.model.markers import Marker

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import DataFrame, DataFrameWriterV2, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

# How many ancestors to inspect for a flow's marker before giving up. Snapshot expiry
# keeps the newest snapshot of every flow (ops/maintenance), so this bound is generous.
MAX_ANCESTORS = 10_000


def load_table(spark: SparkSession, ident: str) -> JavaObject:
    """The Java Iceberg ``Table`` for ``catalog.db.table``, current as of this call.

    A catalog without a table cache (``cache-enabled=false``, icetide's default) loads
    the table afresh, so it is not refreshed again: on a Hive catalog each refresh is
    one more ``get_table`` call to the metastore, a third more of its CPU per look-up. A
    caching catalog may return a stale table, which is refreshed."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, ident)
    if _caches_tables(spark, ident):
        table.refresh()
    return table


def spark_schema(spark: SparkSession, table: JavaObject) -> StructType:
    """The Spark schema of a Java Iceberg ``Table``, as ``spark.table(...).schema`` gives
    it (the same conversion), without a second load of the table or a plan's analysis."""
    from pyspark.sql.types import StructType

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    converted = jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(table.schema())
    return StructType.fromJson(json.loads(converted.json()))


def _caches_tables(spark: SparkSession, ident: str) -> bool:
    """Whether the catalog of ``ident`` may hand out a stale table: unless its conf says
    ``cache-enabled=false`` (Iceberg's default is to cache)."""
    parts = ident.split(".")
    catalog = parts[0] if len(parts) > 2 else spark.conf.get("spark.sql.defaultCatalog", "")
    setting = spark.conf.get(f"spark.sql.catalog.{catalog}.cache-enabled", "true") or "true"
    return setting.strip().lower() != "false"


def read_metadata(spark: SparkSession, ident: str) -> TableMetadata:
    """``ident``'s current metadata (refreshed), read in one py4j call."""
    return metadata_of(spark, load_table(spark, ident))


def iter_ancestor_summaries(spark: SparkSession, ident: str
                            ) -> Iterator[tuple[int, Mapping[str, str]]]:
    """``(snapshot_id, summary)`` from the current snapshot back through its parents."""
    for snap in itertools.islice(read_metadata(spark, ident).ancestors(), MAX_ANCESTORS):
        yield snap.snapshot_id, snap.summary


def newest_event_at(spark: SparkSession, ident: str, snapshot: int | None) -> int | None:
    """The newest event time (``icetide.max-event-time``) that ``ident`` reflects as of
    ``snapshot`` (``None``: its current one): the first marker carrying one, walking back."""
    ancestors = read_metadata(spark, ident).ancestors(snapshot)
    for snap in itertools.islice(ancestors, MAX_ANCESTORS):
        value = snap.summary.get(MarkerKeys.MAX_EVENT_TIME)
        if value:
            return int(value)
    return None


def last_marker(spark: SparkSession, ident: str, flow: str) -> Marker | None:
    """The newest marker that ``flow`` committed to ``ident``, or ``None`` (a Hudi table's:
    from its completed commits' extra metadata, :mod:`icetide.lake.hudi`)."""
    table = hudi.registered(ident)
    if table is not None:
        return hudi.last_marker(spark, table, flow)
    for _, summary in iter_ancestor_summaries(spark, ident):
        if summary.get(MarkerKeys.FLOW) == flow:
            return Marker.from_summary(summary)
    return None


#: Snapshots walked back from the current one to find a commit just made (others may have
#: committed after it: a compaction, another flow).
_RECENT = 100
#: The summary keys :func:`committed` reads: rows added, data files removed (a file
#: rewritten), position deletes added and removed.
_COMMIT_FIGURES = ("added-records", "deleted-data-files", "added-position-deletes",
                   "removed-position-deletes")


@dataclass(frozen=True)
class Committed:
    """A snapshot just committed: Iceberg's figures of it and its parent's id."""

    figures: Mapping[str, str]
    parent: int | None


def committed(spark: SparkSession, ident: str, props: Mapping[str, str]) -> Committed | None:
    """The snapshot that committed ``props``'s marker to ``ident`` just now, or ``None``
    when none of the newest snapshots carries it."""
    table = load_table(spark, ident)
    snap = table.currentSnapshot()
    for _ in range(_RECENT):
        if snap is None:
            return None
        summary = snap.summary()
        parent = snap.parentId()
        if all(summary.get(k) == props.get(k) for k in (MarkerKeys.FLOW, MarkerKeys.POS)):
            figures = {k: str(v) for k in _COMMIT_FIGURES if (v := summary.get(k)) is not None}
            return Committed(figures, None if parent is None else int(parent))
        snap = None if parent is None else table.snapshot(parent)
    return None


def writer(df: DataFrame, ident: str, properties: Mapping[str, str]) -> DataFrameWriterV2:
    """A writer of ``df`` to ``ident`` whose commit carries ``properties`` in its snapshot
    summary."""
    out = df.writeTo(ident)
    for key, value in properties.items():
        out = out.option(f"snapshot-property.{key}", value)
    return out


def append(df: DataFrame, ident: str, properties: Mapping[str, str]) -> None:
    """Append ``df`` to ``ident`` with ``properties`` in the snapshot summary (one commit)."""
    writer(df, ident, properties).append()


def commit_marker_only(spark: SparkSession, ident: str, properties: Mapping[str, str]) -> None:
    """Advance a flow's position with no rows: an empty append carrying the marker."""
    append(spark.table(ident).limit(0), ident, properties)


class _JavaCallable:
    """A py4j callback implementing ``java.util.concurrent.Callable``."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self.error: BaseException | None = None

    def call(self) -> None:
        try:
            self._fn()
        except BaseException as exc:  # re-raised on the Python side below
            self.error = exc
            raise
        return None

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]


def with_commit_properties(
    spark: SparkSession, properties: Mapping[str, str], fn: Callable[[], None]
) -> None:
    """Run ``fn`` (which issues SQL such as MERGE) so that its commit carries ``properties``."""
    from pyspark.java_gateway import ensure_callback_server_started

    sc = spark.sparkContext
    gateway = sc._gateway
    assert gateway is not None and sc._jvm is not None
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    jvm = sc._jvm
    jmap = jvm.java.util.HashMap()
    for key, value in properties.items():
        jmap.put(key, value)
    task = _JavaCallable(fn)
    exc_class = jvm.java.lang.Class.forName("java.lang.RuntimeException")
    try:
        jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(jmap, task, exc_class)
    except Exception:
        if task.error is not None:
            raise task.error from None
        raise


#: Iceberg exceptions of an optimistic commit that lost a race with another committer
#: (a compaction, another writer): nothing was committed, trying again is safe.
_CONFLICTS = ("org.apache.iceberg.exceptions.CommitFailedException",
              "org.apache.iceberg.exceptions.ValidationException")


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` (a py4j/Spark error) is an Iceberg commit conflict: the commit
    failed atomically because someone else committed first (never "state unknown")."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    seen = 0
    while java is not None and seen < 20:
        try:
            name = str(java.getClass().getName())
            java = java.getCause()
        except Exception:  # the gateway may be gone
            break
        if name in _CONFLICTS:
            return True
        seen += 1
    text = str(exc)
    return any(name in text for name in _CONFLICTS)
