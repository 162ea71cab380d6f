"""One maintenance pass over one table, in order: compaction (bin-pack, or sort/z-order
where declared; applying deletes once they pass ``delete_ratio``), position-delete
rewrite, manifest rewrite, consumer-aware snapshot expiry, orphan removal (every
``orphan_interval``, files older than ``orphan_age``), the metadata cap.

Expiry never removes a snapshot a flow still needs (its newest marker on the table, or
a consumer's committed position on it — found by reading the newest markers of every
table in the catalog), unless that consumer is further behind than ``max_consumer_lag``:
it then stops with an error naming its full refresh, instead of skipping data.

A Hudi table's pass is :mod:`icetide.maintainer.hudi`'s (compaction, clean, archive).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from icetide.config import MaintenanceConfig, Settings
from icetide.lake import hudi
from icetide.lake.commit import load_table, read_metadata
from icetide.lake.metadata import TableMetadata, metadata_of
from icetide.maintainer import actions
from icetide.maintainer.hudi import HudiMaintainer
from icetide.maintainer.inspect import all_marks, catalog_tables, medium_bytes, table_stats
from icetide.maintainer.report import (
    AnyReport,
    Compaction,
    DeleteRewrite,
    Expiry,
    MaintenanceReport,
    ManifestRewrite,
    OrphanSweep,
    StepResults,
    TableStats,
)
from icetide.model.keys import TableProperties
from icetide.model.last_pass import LastPass
from icetide.tables.maintenance_policy import (
    FlowMark,
    compaction_options,
    delete_rewrite_options,
    expiry_cutoff,
    full_size_bytes,
    metadata_properties,
    needed_snapshots,
    needs_full_compaction,
    rewrite_strategy,
    table_policy,
)

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class Maintainer:
    """Maintenance passes on ``spark``'s catalog ``settings.catalog.name``."""

    def __init__(self, spark: SparkSession, settings: Settings, *, dry_run: bool = False,
                 policy: MaintenanceConfig | None = None, catalog: str | None = None,
                 elsewhere: Callable[[str, str], bool] | None = None) -> None:
        self.spark = spark
        #: ``(table, flow) → whether another process runs that flow``: a Hudi table's
        #: pass yields to it (maintainer/hudi.py); ``None`` in the run's own process
        self.elsewhere = elsewhere
        self.settings = settings
        self.catalog = catalog or settings.catalog.name
        self.dry_run = dry_run
        self.base = policy or settings.maintenance
        self._marks: list[FlowMark] | None = None

    def qualify(self, table: str) -> str:
        return table if table.count(".") >= 2 else f"{self.catalog}.{table}"

    def tables(self) -> list[str]:
        return catalog_tables(self.spark, self.catalog)

    def marks(self, refresh: bool = False) -> list[FlowMark]:
        """Every flow's newest marker on every table (read once per ``refresh``)."""
        if self._marks is None or refresh:
            self._marks = all_marks(self.spark, self.tables())
        return self._marks

    def policy(self, ident: str) -> MaintenanceConfig:
        """``ident``'s policy: the base with its table properties (a Hudi table: the base)."""
        if hudi.find(self.spark, self.qualify(ident)) is not None:
            return self.base
        return table_policy(self.base, read_metadata(self.spark, ident).properties)

    def run(self, table: str, orphans: bool = True) -> AnyReport:
        """One pass over ``table``; ``orphans``: sweep orphan files too (Iceberg)."""
        ident = self.qualify(table)
        found = hudi.find(self.spark, ident)
        if found is not None:
            # the flows' positions read anew: Hudi keeps commits by count from them, and a
            # position cached before its consumer moved on may be archived already
            return HudiMaintainer(self.spark, self.settings, self.base, dry_run=self.dry_run,
                                  marks=lambda: self.marks(refresh=True),
                                  elsewhere=self.elsewhere).run(found)
        began = time.monotonic()
        jtable = load_table(self.spark, ident)
        policy = table_policy(self.base, metadata_of(self.spark, jtable).properties)
        before = table_stats(self.spark, jtable)
        steps = actions.Steps(ident, self.dry_run)
        results = StepResults(
            compaction=steps.run("compaction", lambda: self._compact(ident, policy, before)),
            deletes=steps.run("deletes", lambda: self._deletes(ident, policy, before)),
            manifests=steps.run("manifests", lambda: self._manifests(ident, policy)),
            expiry=steps.run("expiry", lambda: self._expire(ident, policy)),
            orphans=steps.run("orphans",
                              lambda: self._orphans(ident, policy) if orphans else None),
        )
        if not self.dry_run:
            self._record(ident, policy, results.done())
        after = table_stats(self.spark, load_table(self.spark, ident))
        return MaintenanceReport(ident, self.dry_run, before, after, results, steps.skipped,
                                 round(time.monotonic() - began, 3), steps.seconds)

    # -- the steps -------------------------------------------------------------------
    def _compact(self, ident: str, policy: MaintenanceConfig, stats: TableStats
                 ) -> Compaction | None:
        heavy = stats.records > 0 and stats.position_deletes / stats.records >= policy.delete_ratio
        small = (stats.data_files >= policy.min_input_files
                 and stats.avg_file_bytes < full_size_bytes(policy))
        if not (small or heavy):
            return None
        jtable = load_table(self.spark, ident)
        strategy, order = rewrite_strategy(policy, not jtable.sortOrder().isUnsorted())
        full = heavy or needs_full_compaction(
            medium_bytes(self.spark, ident, jtable, policy), policy)
        plan = Compaction(strategy, order, "all below full size" if full else "small only",
                          stats.data_files, heavy)
        if self.dry_run:
            return plan
        options = compaction_options(policy, heavy, full, stats.bytes)
        done = actions.retry_conflicts(
            f"compaction of {ident}",
            lambda: actions.rewrite_data_files(self.spark, ident, strategy, order, options))
        return replace(plan, done=done)

    def _deletes(self, ident: str, policy: MaintenanceConfig, stats: TableStats
                 ) -> DeleteRewrite | None:
        current = (table_stats(self.spark, load_table(self.spark, ident)) if not self.dry_run
                   else stats)
        if current.delete_files < 2:
            return None
        if self.dry_run:
            return DeleteRewrite(current.delete_files)
        options = delete_rewrite_options(policy, current.bytes)
        return DeleteRewrite(current.delete_files, actions.retry_conflicts(
            f"delete rewrite of {ident}",
            lambda: actions.rewrite_position_deletes(self.spark, ident, options)))

    def _manifests(self, ident: str, policy: MaintenanceConfig) -> ManifestRewrite | None:
        manifests = table_stats(self.spark, load_table(self.spark, ident)).manifests
        if manifests <= policy.max_manifests:
            return None
        if self.dry_run:
            return ManifestRewrite(manifests)
        return ManifestRewrite(manifests, actions.retry_conflicts(
            f"manifest rewrite of {ident}", lambda: actions.rewrite_manifests(self.spark, ident)))

    def _expire(self, ident: str, policy: MaintenanceConfig) -> Expiry | None:
        meta = read_metadata(self.spark, ident)
        need = needed_snapshots(ident, self.marks())
        ts = {sid: s.timestamp_ms for sid in need if (s := meta.snapshots.get(sid)) is not None}
        cutoff = expiry_cutoff(int(time.time() * 1000), policy, ts)
        expirable = _expirable(meta, cutoff, policy.retain_last)
        if not expirable:
            return None
        if not self.dry_run:
            actions.retry_conflicts(f"expiry on {ident}", lambda: actions.expire_snapshots(
                load_table(self.spark, ident), cutoff, policy.retain_last))
        return Expiry(cutoff, expirable, len(ts))

    def _orphans(self, ident: str, policy: MaintenanceConfig) -> OrphanSweep | None:
        jtable = load_table(self.spark, ident)
        now = int(time.time() * 1000)
        if now - _last_pass(jtable).orphans_at_ms < policy.orphan_interval * 1000:
            return None
        older = now - int(max(policy.orphan_age, 3600.0) * 1000)
        return actions.remove_orphans(self.spark, jtable, older, self.dry_run)

    def _record(self, ident: str, policy: MaintenanceConfig, done: tuple[str, ...]) -> None:
        """The metadata cap and the last pass, as table properties (one metadata commit)."""
        jtable = load_table(self.spark, ident)
        now = int(time.time() * 1000)
        orphans_at = now if "orphans" in done else _last_pass(jtable).orphans_at_ms
        record = LastPass(now, tuple(sorted(done)), orphans_at)
        props = {**metadata_properties(policy),
                 TableProperties.MAINTENANCE_LAST: record.dump()}
        update = jtable.updateProperties()
        for key, value in props.items():
            update = update.set(key, value)
        actions.retry_conflicts(f"recording maintenance of {ident}", update.commit)


def _last_pass(jtable: JavaObject) -> LastPass:
    return LastPass.parse(jtable.properties().get(TableProperties.MAINTENANCE_LAST))


def _expirable(meta: TableMetadata, cutoff_ms: int, retain_last: int) -> int:
    """How many snapshots an expiry at ``cutoff_ms`` keeping ``retain_last`` removes: a
    snapshot a tag or branch names is kept (Iceberg's expiry keeps it while the ref lives)."""
    keep = {s.snapshot_id for s in itertools.islice(meta.ancestors(), retain_last)}
    keep.update(meta.refs.values())
    return sum(1 for s in meta.snapshots.values()
               if s.timestamp_ms < cutoff_ms and s.snapshot_id not in keep)
