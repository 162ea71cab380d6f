"""Dimension lookups: a small table's current snapshot, scanned once per snapshot.

``dp.read("dim_db.products")`` in a flow reads the dimension's current snapshot in every
micro-batch. A CDC dimension is a merge-on-read table, so between two compactions that
scan opens dozens of small data and delete files — in the soak, the DWD batch grew from
0.8 s after a compaction of ``dim_db.products`` to 1.7 s before the next — though the
dimension changes far less often than the flows reading it commit.

:class:`LookupCache` keeps a small table's rows in Spark's cache, keyed by its current
snapshot id: each read still loads the table's metadata (so it is the *current*
snapshot, as before), and scans files only when the snapshot changed. The rows are read
with ``snapshot-id``, so a cached relation can never be taken for another snapshot. A
table larger than ``max_bytes`` (a materialized view's fact input) is read as before.
One cache per Spark session: every flow of a run shares its dimensions.

``dp.lookup_join`` (:meth:`LookupCache.join`) broadcasts a small dimension's cached rows.
A dimension too large to broadcast (10 M rows, whose hash table the driver would build
and ship to every executor at each snapshot) is cached once per snapshot hash-partitioned by
the lookup keys and sorted within each partition; each batch is then hash-partitioned
the same way and merged with it, so only the batch is shuffled and the dimension is
neither exchanged nor sorted per batch. A hot key lands in one partition of the batch,
which the merge takes in one pass (a key's dimension row is one row). What it costs per
batch is a pass over the cached rows; what it costs per dimension snapshot is a full
read, shuffle and sort of the table (docs/semantics.md, Lookup joins).
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.lake.commit import load_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icetide.pipelines.lookup import LookupSpec

log = logging.getLogger(__name__)

#: Tables whose current snapshot holds more data-file bytes than this are not cached by
#: ``read`` nor broadcast by ``join``.
MAX_BYTES = 64 * 1024 * 1024
#: A large dimension is cached in partitions of about this many data-file bytes (at least
#: one per core).
PARTITION_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class _Held:
    snapshot: int
    df: DataFrame
    partitions: int = 0  # a partitioned dimension's partitions (hash of the keys)


class LookupCache:
    """Current snapshots of dimension tables, cached in Spark while they stay current."""

    def __init__(self, spark: SparkSession, max_bytes: int = MAX_BYTES) -> None:
        self.spark = spark
        self.max_bytes = max_bytes
        self._held: dict[str, _Held] = {}
        self._parted: dict[tuple[str, LookupSpec], _Held] = {}
        self._lock = threading.Lock()

    def _current(self, ident: str) -> tuple[int, int] | None:
        """``ident``'s current snapshot id and data bytes; None when it cannot be read by
        snapshot id (not an Iceberg table, empty, or a column added since its last write:
        a snapshot-id read would have the snapshot's older schema)."""
        try:
            table = load_table(self.spark, ident)
        except Exception:  # not a table (yet): Spark's own error says so
            return None
        snap = table.currentSnapshot()
        if snap is None or snap.schemaId() != table.schema().schemaId():
            return None
        return int(snap.snapshotId()), int(snap.summary().get("total-files-size") or 0)

    def read(self, ident: str) -> DataFrame:
        """``ident``'s current snapshot (cached when small)."""
        return self._read(ident, self._current(ident))

    def _read(self, ident: str, current: tuple[int, int] | None) -> DataFrame:
        if current is None or current[1] > self.max_bytes:
            self.forget(ident)
            return self.spark.table(ident)
        snapshot, size = current
        with self._lock:
            held = self._held.get(ident)
            if held is not None and held.snapshot == snapshot:
                return held.df
            df = _persist(self._at(ident, snapshot))
            self._held[ident] = _Held(snapshot, df)
        if held is not None:  # a batch still reading it recomputes from its snapshot
            held.df.unpersist(blocking=False)
        log.debug("lookup %s: snapshot %d cached (%d bytes)", ident, snapshot, size)
        return df

    def join(self, left: DataFrame, ident: str, spec: LookupSpec) -> DataFrame:
        """``left`` joined by ``spec.keys`` with ``ident``'s current rows: a small table
        broadcast from its cached rows; a larger one (more than ``max_bytes``) without
        broadcasting it: its rows cached once per snapshot, hash-partitioned by the keys
        and sorted within each partition, so a batch shuffles only its own rows to them
        and merges (no exchange or sort of the dimension per batch)."""
        current = self._current(ident)
        if current is None:  # read as it is; Spark picks the join
            return spec.join(left, self.spark.table(ident))
        if current[1] <= self.max_bytes:
            return spec.join(left, self._read(ident, current), "broadcast")
        parted = self._partitioned(ident, spec, *current)
        # "merge": never broadcast it, whatever the size estimate says (it is cached)
        return spec.join(left.repartition(parted.partitions, *spec.keys), parted.df, "merge")

    def _partitioned(self, ident: str, spec: LookupSpec, snapshot: int, size: int) -> _Held:
        with self._lock:
            held = self._parted.get((ident, spec))
            if held is not None and held.snapshot == snapshot:
                return held
            rows = self._at(ident, snapshot)
            rows = rows.select(*spec.dimension_columns(rows.columns))
            n = max(self.spark.sparkContext.defaultParallelism, -(-size // PARTITION_BYTES))
            df = _persist(rows.repartition(n, *spec.keys).sortWithinPartitions(*spec.keys))
            fresh = self._parted[(ident, spec)] = _Held(snapshot, df, n)
        if held is not None:
            held.df.unpersist(blocking=False)
        log.info("lookup %s: snapshot %d (%d bytes) cached in %d partitions by %s", ident,
                 snapshot, size, n, ", ".join(spec.keys))
        return fresh

    def partitions(self, ident: str) -> int | None:
        """How many partitions ``ident`` is cached in for a lookup join too large to
        broadcast (None: it is not cached that way)."""
        with self._lock:
            return next((h.partitions for (i, _), h in self._parted.items() if i == ident),
                        None)

    def _at(self, ident: str, snapshot: int) -> DataFrame:
        return (self.spark.read.format("iceberg").option("snapshot-id", str(snapshot))
                .load(ident))

    def forget(self, ident: str) -> None:
        """Drop ``ident``'s cached rows, if any."""
        with self._lock:
            dropped = [self._held.pop(ident, None),
                       *(self._parted.pop(k) for k in [k for k in self._parted if k[0] == ident])]
        for held in dropped:
            if held is not None:
                held.df.unpersist(blocking=False)

    def clear(self) -> None:
        """Drop every cached table."""
        for ident in {*self._held, *(k[0] for k in self._parted)}:
            self.forget(ident)


def _persist(df: DataFrame) -> DataFrame:
    from pyspark import StorageLevel

    return df.persist(StorageLevel.MEMORY_AND_DISK)


_CACHES: weakref.WeakKeyDictionary[SparkSession, LookupCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def lookups(spark: SparkSession) -> LookupCache:
    """The lookup cache of ``spark`` (one per session)."""
    with _CACHES_LOCK:
        cache = _CACHES.get(spark)
        if cache is None:
            cache = _CACHES[spark] = LookupCache(spark)
        return cache
