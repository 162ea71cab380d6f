"""The batch context: what a flow's transform sees while one micro-batch runs.

The loop plans a range per source, then calls the transform with a ``BatchContext``.
The transform reads its sources (``ctx.read_source``), reads current table snapshots
(``ctx.table``) and may emit rows to side tables (``ctx.emit``: dead letters). User
code written against the pipeline API reaches the same object through
:func:`current_batch`, which the loop binds for the duration of the transform.
"""

from __future__ import annotations

import contextvars
from collections import ChainMap
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icetide.errors import PipelineError
from icetide.model.source import AnyBatch, AnySource
from icetide.pipelines.registry import set_within

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icetide.pipelines.lookup import LookupSpec

_CURRENT: contextvars.ContextVar[BatchContext] = contextvars.ContextVar("icetide_batch")


@dataclass
class BatchContext:
    """One micro-batch of one flow."""

    spark: SparkSession
    flow: str
    catalog: str
    sources: Mapping[str, AnySource]
    batches: Mapping[str, AnyBatch]
    config: Mapping[str, object] = field(default_factory=dict)
    #: pipeline source name → source key (``clicks`` → ``kafka:clicktopic``)
    aliases: Mapping[str, str] = field(default_factory=dict)
    side_outputs: dict[str, DataFrame] = field(default_factory=dict)
    #: per side table, the observed metrics that count its rows (see :meth:`emit`); a
    #: table with an uncounted emit is absent
    side_metrics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: source keys the transform read (discovery uses this to learn a flow's inputs)
    accessed: set[str] = field(default_factory=set)
    #: lake tables looked up with ``table`` (dimension reads)
    looked_up: set[str] = field(default_factory=set)
    #: What ``dp.read_stream`` gives the transform: the rows each input ``added`` in
    #: this batch; the rows it ``removed`` (a retraction pass); or ``full``, everything
    #: it holds at the batch's end (a recomputation of the groups a removal touched).
    reading: str = "added"
    #: In ``full`` reading: per source key, a frame of the column values to keep (a
    #: semi-join of the input on its columns), when the input's rows are known to reach
    #: only the output keys they share (engine/changes.py).
    full_filter: dict[str, DataFrame] = field(default_factory=dict)
    #: Whether :meth:`read_removed` keeps what it read (off where it is read once).
    cache_removed: bool = True
    #: The frames ``dp.read_stream`` returned, per source key (lineage of the output).
    streamed: dict[str, DataFrame] = field(default_factory=dict)
    _cache: dict[str, DataFrame] = field(default_factory=dict)
    _cached_sources: set[str] = field(default_factory=set)

    def qualify(self, name: str) -> str:
        """``db.table`` → ``catalog.db.table`` (already-qualified names pass through)."""
        return name if name.count(".") >= 2 else f"{self.catalog}.{name}"

    def read_source(self, name: str, *, cache: bool = True) -> DataFrame:
        """The rows of this batch's range of a source (by name or key), read once.

        With ``cache=False`` the caller caches what it derives (see :meth:`keep`).
        """
        key = self.aliases.get(name, name)
        if key not in self.sources:
            known = ", ".join(sorted(self.sources)) or "none"
            raise PipelineError(
                f"flow {self.flow!r} reads source {name!r} which it did not declare "
                f"(declared: {known}); declare it under `sources:` in icetide-pipeline.yml"
            )
        self.accessed.add(key)
        if not cache:
            return self.sources[key].read(self.spark, self.batches[key])
        if key not in self._cache:
            from pyspark import StorageLevel

            df = self.sources[key].read(self.spark, self.batches[key])
            self._cache[key] = df.persist(StorageLevel.MEMORY_AND_DISK)
            self._cached_sources.add(key)
        return self._cache[key]

    def read_removed(self, name: str) -> DataFrame | None:
        """The rows this batch's range of a source removed; ``None``: none. Kept for the
        batch unless ``cache_removed`` is off (a caller that reads them once: Spark then
        reads only the columns the query uses)."""
        key = self.aliases.get(name, name)
        label = f"removed:{key}"
        if label in self._cache:
            return self._cache[label]
        found = self.sources[key].removed(self.spark, self.batches[key])
        if found is None or not self.cache_removed:
            return found
        return self.keep(label, found)

    def read_full(self, name: str) -> DataFrame:
        """Everything a source holds at this batch's end (not cached: filtered per use)."""
        key = self.aliases.get(name, name)
        return self.sources[key].full(self.spark, self.batches[key])

    def removes(self) -> bool:
        """Whether a source the transform read removed rows in this batch."""
        return any(self.batches[k].info.get("removes") for k in self.accessed
                   if k in self.batches)

    def derived(self, reading: str, full_filter: Mapping[str, DataFrame] | None = None,
                *, cache_removed: bool = True) -> BatchContext:
        """This batch read another way (``removed`` or ``full``), sharing its caches."""
        from dataclasses import replace

        return replace(self, reading=reading, full_filter=dict(full_filter or {}),
                       streamed={}, side_outputs={}, side_metrics={},
                       cache_removed=cache_removed)

    def keep(self, label: str, df: DataFrame, *, source: str | None = None) -> DataFrame:
        """Persist ``df`` for the rest of the batch (released with the batch); ``source``:
        the key of the source whose whole batch ``df`` holds (e.g. its decoded rows)."""
        from pyspark import StorageLevel

        kept = df.persist(StorageLevel.MEMORY_AND_DISK)
        self._cache[label] = kept
        if source is not None:
            self._cached_sources.add(source)
        return kept

    def is_cached(self, key: str) -> bool:
        """Whether this batch holds source ``key``'s rows (or a kept derivation) in memory."""
        return key in self._cached_sources

    def add_source(self, source: AnySource, batch: AnyBatch) -> None:
        """Register a source found while the transform runs (discovery of dp.read_stream)."""
        if source.key not in self.sources:
            self.sources = {**self.sources, source.key: source}
            # a ChainMap keeps lazily planned batches (discovery) lazy
            self.batches = ChainMap({source.key: batch}, self.batches)  # type: ignore[arg-type]

    def table(self, name: str) -> DataFrame:
        """The current snapshot of a lake table (a dimension lookup as of now): a small
        table's rows are scanned once per snapshot (:mod:`icetide.lake.lookups`)."""
        from icetide.lake.lookups import lookups

        ident = self.qualify(name)
        self.looked_up.add(ident)
        return lookups(self.spark).read(ident)

    def lookup_join(self, left: DataFrame, name: str, spec: LookupSpec) -> DataFrame:
        """``left`` enriched by key from lake table ``name`` as of now (``dp.lookup_join``):
        a small table broadcast, a large one joined without broadcasting it
        (:mod:`icetide.lake.lookups`)."""
        from icetide.lake.lookups import lookups

        ident = self.qualify(name)
        self.looked_up.add(ident)
        return lookups(self.spark).join(left, ident, spec)

    def emit(self, table: str, df: DataFrame, *, rows_metric: str | None = None) -> None:
        """Send ``df`` to side table ``table`` (e.g. a dead-letter table) in this batch.

        ``rows_metric``: the name of a metric observed (``Dataset.observe``) on a frame the
        flow's output derives from, counting exactly ``df``'s rows; the loop then learns
        the count from the job that counts the output instead of a job of its own.
        """
        ident = self.qualify(table)
        prior = self.side_outputs.get(ident)
        self.side_outputs[ident] = df if prior is None else prior.unionByName(df)
        metrics = self.side_metrics.get(ident, ())
        if rows_metric is None or (prior is not None and not metrics):
            self.side_metrics.pop(ident, None)
        else:
            self.side_metrics[ident] = (*metrics, rows_metric)

    def side_rows(self, ident: str, observed: Mapping[str, int]) -> int | None:
        """Rows emitted to side table ``ident``, if the ``observed`` metrics tell."""
        names = self.side_metrics.get(ident)
        if not names or any(n not in observed for n in names):
            return None
        return sum(observed[n] for n in names)

    def release(self) -> None:
        """Drop cached source reads and what the sources held for the batch."""
        for df in self._cache.values():
            df.unpersist()
        self._cache.clear()
        self._cached_sources.clear()
        for key in self.accessed:
            if key in self.sources and key in self.batches:
                self.sources[key].release(self.batches[key])


def current_batch() -> BatchContext:
    """The batch being processed; raises outside a running flow."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise PipelineError(
            "no micro-batch is running: source reads and dp.read() only work inside a flow "
            "function executed by `icetide run`"
        ) from None


def bound(ctx: BatchContext) -> AbstractContextManager[BatchContext]:
    """Bind ``ctx`` as the current batch for the duration of the block."""
    return set_within(_CURRENT, ctx)
