"""One maintenance pass over a Hudi table: compaction of a merge-on-read table's log files
into base files, then cleaning and archival that keep what every flow still needs.

icetide's Hudi commits run none of Hudi's table services (:data:`icetide.lake.hudi.
SERVICES_OFF`): after each commit they would clean and archive by counts of their own,
blind to the flows reading the table incrementally. This pass runs them through Hudi's
own write client (``SparkRDDWriteClient``: ``scheduleCompaction`` + ``compact``,
``clean``, ``archive``) with counts from :func:`icetide.tables.hudi_retention.
hudi_retention`: the policy's history, every consumer's position with the file slices a
read as of it needs, every writer's newest marker in the active timeline.

Hudi runs its table services beside ONE writer. In a pipeline's process the pass holds
the table's write lock (:func:`icetide.lake.hudi.write_lock`), so a flow's commit waits
for it; from another process (``icetide maintain`` beside a run) the pass yields when a
flow writing the table holds its lease: that run's own schedule maintains the table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from icetide.config import MaintenanceConfig, Settings
from icetide.lake.hudi import HudiTable, write_lock
from icetide.lake.hudi_timeline import HudiTimeline, instant_ms
from icetide.maintainer import actions
from icetide.maintainer.report import (
    HudiArchive,
    HudiClean,
    HudiCompaction,
    HudiMaintenanceReport,
    HudiStats,
    HudiStepResults,
)
from icetide.tables.hudi_retention import (
    HudiCommit,
    HudiFile,
    HudiRetention,
    cleanable,
    consumer_positions,
    earliest_retained,
    file_counts,
    hudi_retention,
    parse_file,
)
from icetide.tables.maintenance_policy import FlowMark

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

MERGE_ON_READ = "MERGE_ON_READ"


def _files(timeline: HudiTimeline) -> tuple[list[HudiFile], int]:
    """The table's data files (outside ``.hoodie``) and the bytes of everything under it."""
    from pyarrow.fs import FileSelector

    files, total = [], 0
    for info in timeline.fs.get_file_info(FileSelector(timeline.path, recursive=True)):
        if not info.is_file:
            continue
        total += info.size or 0
        if "/.hoodie/" not in f"{info.path}/"[len(timeline.path):]:
            found = parse_file(info.base_name)
            if found is not None:
                files.append(found)
    return files, total


def hudi_stats(timeline: HudiTimeline) -> HudiStats:
    """File groups, files and active commits of the table (a listing, no JVM)."""
    files, total = _files(timeline)
    return HudiStats(**file_counts(files), commits=len(timeline.writes()), disk_bytes=total)


def commits_of(timeline: HudiTimeline) -> list[HudiCommit]:
    """The active timeline's completed commits as Hudi's cleaner and archiver count them
    (by requested time)."""
    return sorted((HudiCommit(i.requested, i.completed, instant_ms(i.completed, timeline.zone))
                   for i in timeline.writes()), key=lambda c: c.requested)


def writer_flows(timeline: HudiTimeline) -> dict[str, str]:
    """Each flow writing the table → the completion time of its newest marker on it."""
    found: dict[str, str] = {}
    for instant, marker in timeline.markers():  # newest first
        found.setdefault(marker.flow, instant.completed)
    return found


def _option_empty(spark: SparkSession) -> JavaObject:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.org.apache.hudi.common.util.Option.empty()


def write_client(spark: SparkSession, table: HudiTable, table_type: str,
                 services: dict[str, str]) -> JavaObject:
    """Hudi's Spark write client on ``table`` with its write options and ``services``
    (close it)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    props = jvm.java.util.Properties()
    options = {**table.options(), "hoodie.datasource.write.table.type": table_type, **services}
    for key, value in options.items():
        props.setProperty(key, value)
    config = (jvm.org.apache.hudi.config.HoodieWriteConfig.newBuilder().withPath(table.path)
              .withProps(props).build())
    context = jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(spark.sparkContext._jsc)
    return jvm.org.apache.hudi.client.SparkRDDWriteClient(context, config)


def retention_options(retention: HudiRetention) -> dict[str, str]:
    """The cleaner's and the archiver's settings of a pass keeping ``retention``."""
    return {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
            "hoodie.cleaner.commits.retained": str(retention.clean_commits),
            "hoodie.keep.min.commits": str(retention.archive_min),
            "hoodie.keep.max.commits": str(retention.archive_max)}


#: Compaction plans every file group with a log file (one delta commit is enough).
COMPACTION_OPTIONS = {"hoodie.compact.inline.max.delta.commits": "1",
                      "hoodie.compact.inline.trigger.strategy": "NUM_COMMITS"}


class HudiMaintainer:
    """Maintenance passes over Hudi tables (see the module doc)."""

    def __init__(self, spark: SparkSession, settings: Settings, policy: MaintenanceConfig, *,
                 dry_run: bool = False, marks: Callable[[], list[FlowMark]] = list,
                 elsewhere: Callable[[str, str], bool] | None = None) -> None:
        self.spark = spark
        self.settings = settings
        self.policy = policy
        self.dry_run = dry_run
        self.marks = marks
        #: ``(table, flow) → whether another process runs that flow`` (its lease)
        self.elsewhere = elsewhere

    def timeline(self, table: HudiTable) -> HudiTimeline:
        return HudiTimeline(table.path, self.settings)

    def run(self, table: HudiTable) -> HudiMaintenanceReport:
        """One pass over ``table``: compaction, clean, archive (dry: what they would do)."""
        began = time.monotonic()
        timeline = self.timeline(table)
        before = hudi_stats(timeline)
        steps = actions.Steps(table.ident, self.dry_run)
        results = HudiStepResults()
        busy = self._writer_elsewhere(table, timeline)
        if busy is not None:
            steps.skipped["hudi services"] = busy
        elif self.dry_run:
            results = self._steps(table, before, timeline, steps)
        else:
            with write_lock(table.ident):
                results = self._steps(table, before, timeline, steps)
        return HudiMaintenanceReport(table.ident, self.dry_run, before,
                                     hudi_stats(self.timeline(table)), results, steps.skipped,
                                     round(time.monotonic() - began, 3), steps.seconds)

    def _writer_elsewhere(self, table: HudiTable, timeline: HudiTimeline) -> str | None:
        """Why the pass yields (a flow writing the table runs in another process), else None."""
        if self.elsewhere is None:
            return None
        for flow in writer_flows(timeline):
            if self.elsewhere(table.ident, flow):
                return (f"flow {flow} writes {table.ident} in another process: Hudi runs its "
                        "table services beside one writer, so that run's maintenance "
                        "schedule maintains it")
        return None

    def _steps(self, table: HudiTable, before: HudiStats, timeline: HudiTimeline,
               steps: actions.Steps) -> HudiStepResults:
        compaction = steps.run("compaction", lambda: self._compact(table, before, timeline))
        timeline = self.timeline(table)  # a compaction is one more commit to count
        retention = self._retention(table, timeline)
        return HudiStepResults(
            compaction,
            steps.run("clean", lambda: self._clean(table, timeline, retention)),
            steps.run("archive", lambda: self._archive(table, timeline, retention)))

    def _retention(self, table: HudiTable, timeline: HudiTimeline) -> HudiRetention:
        consumers = consumer_positions(table.ident, self.marks())
        writers = {instant: f"flow {flow} (its newest marker)"
                   for flow, instant in writer_flows(timeline).items()}
        return hudi_retention(commits_of(timeline), consumers, writers,
                              int(time.time() * 1000), self.policy)

    def _compact(self, table: HudiTable, before: HudiStats, timeline: HudiTimeline
                 ) -> HudiCompaction | None:
        pending = before.pending_log_files
        if timeline.table_type != MERGE_ON_READ or pending == 0:
            return None
        if self.dry_run:
            return HudiCompaction(pending, before.pending_file_groups)
        client = write_client(self.spark, table, timeline.table_type, COMPACTION_OPTIONS)
        try:
            instant = client.scheduleCompaction(_option_empty(self.spark))
            if not instant.isPresent():
                return None
            client.compact(instant.get(), True)
        finally:
            client.close()
        log.info("hudi %s: compacted %d log files (instant %s)", table.ident, pending,
                 instant.get())
        return HudiCompaction(pending, before.pending_file_groups, str(instant.get()))

    def _clean(self, table: HudiTable, timeline: HudiTimeline, retention: HudiRetention
               ) -> HudiClean | None:
        commits = commits_of(timeline)
        earliest = earliest_retained(commits, retention.clean_commits)
        if earliest is None:
            return None
        files, _ = _files(timeline)
        plan = HudiClean(retention.clean_commits, earliest, cleanable(files, earliest),
                         retention.kept_for)
        if self.dry_run:
            return plan if plan.files else None
        client = write_client(self.spark, table, timeline.table_type, retention_options(retention))
        try:
            cleaned = client.clean()
        finally:
            client.close()
        if cleaned is None:
            return None
        return replace(plan, files=int(cleaned.getTotalFilesDeleted()))

    def _archive(self, table: HudiTable, timeline: HudiTimeline, retention: HudiRetention
                 ) -> HudiArchive | None:
        before = len(timeline.writes())
        plan = HudiArchive(retention.archivable(before), retention.archive_min,
                           retention.kept_for)
        if not plan.commits:
            return None
        if self.dry_run:
            return plan
        client = write_client(self.spark, table, timeline.table_type, retention_options(retention))
        try:
            client.archive()
        finally:
            client.close()
        archived = before - len(self.timeline(table).writes())
        return replace(plan, commits=archived) if archived else None
