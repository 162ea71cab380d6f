"""Every key icetide writes into Iceberg metadata, each beside its default (pure, no JVM).

As pyiceberg's ``TableProperties`` keep ``X`` and ``X_DEFAULT`` side by side, so here:

* :class:`MarkerKeys`: a flow commit's snapshot-summary keys (see :mod:`.markers`);
* :class:`MarkerExtra`: the extra marker keys the engine adds (stored under
  ``icetide.``, read back from :attr:`~icetide.model.markers.Marker.extra` without it);
* :class:`TableProperties`: the table properties icetide sets and reads.

``icetide status`` and the dashboard read these keys with no Spark in the process, so
this module imports nothing but the standard library.
"""

from __future__ import annotations


class MarkerKeys:
    """Snapshot-summary keys of a flow's marker (and of a MERGE's change counts)."""

    PREFIX = "icetide."
    FLOW = "icetide.flow"
    START = "icetide.start"  # JSON {source_key: position} the batch started at
    START_DEFAULT = "{}"
    POS = "icetide.pos"  # JSON {source_key: position} the batch ended at
    ROWS = "icetide.rows"  # rows written to this table by the batch
    ROWS_DEFAULT = 0
    ROWS_IN = "icetide.rows-in"  # rows read from the sources
    ROWS_IN_DEFAULT = 0
    DLQ_ROWS = "icetide.dlq-rows"  # rows sent to the dead-letter table
    DLQ_ROWS_DEFAULT = 0
    MAX_EVENT_TIME = "icetide.max-event-time"  # epoch ms (absent: no event time)
    BATCH_MS = "icetide.batch-ms"  # wall time of the batch
    COMMITTED_AT = "icetide.committed-at"  # epoch ms at commit time (driver clock)
    #: A MERGE's rows inserted, updated and deleted (absent: not counted before commit).
    INSERTED = "icetide.inserted"
    UPDATED = "icetide.updated"
    DELETED = "icetide.deleted"
    CHANGES_DEFAULT = 0


class MarkerExtra:
    """Extra marker keys (``icetide.<key>`` in the summary), written by the engine."""

    MASTER = "master"  # the Spark master of the run
    EXECUTORS = "executors"  # id@host:port, comma-separated
    EXECUTORS_DEFAULT = ""
    FRESHNESS_MODE = "freshness.mode"  # continuous | scheduled | once
    FRESHNESS_TARGET_MS = "freshness.target-ms"  # absent: no target declared
    FRESHNESS_WARN_MS = "freshness.warn-ms"  # absent: no warning threshold declared
    FRESHNESS_ACHIEVED_MS = "freshness.achieved-ms"  # commit time − newest event time
    #: ``expect.<name>.passed|failed|action`` per expectation, and the rows dropped.
    EXPECT_PREFIX = "expect."
    EXPECT_DROPPED = "expect.dropped"


class TableProperties:
    """Table properties icetide sets on the tables it manages."""

    #: ``icetide.maintenance.<key>``: a table's override of ``maintenance.<key>``.
    MAINTENANCE_PREFIX = "icetide.maintenance."
    #: The last maintenance pass (JSON: at, actions, files before/after).
    MAINTENANCE_LAST = "icetide.maintenance-last"
    #: The column whose newest value is the table's event time (freshness).
    EVENT_TIME_COLUMN = "icetide.event-time-column"
    #: A refreshed table's interval ("5m", seconds); 0: refresh on every upstream commit.
    REFRESH_INTERVAL = "icetide.refresh-interval"
    REFRESH_INTERVAL_DEFAULT = 0.0
    #: ``icetide table suspend``: "true" while the table's flows are suspended.
    SUSPENDED = "icetide.suspended"
    #: ``icetide table set-freshness``: the table's freshness target (a duration), set
    #: while the pipeline runs; it replaces what the code and the spec file declare.
    FRESHNESS = "icetide.freshness"
    #: ``icetide.error.<flow>``: the last error of a flow (JSON: at, message).
    ERROR_PREFIX = "icetide.error."
    #: A CDC target's flow, anchor, source key and upstream table (``db.table``).
    CDC_FLOW = "icetide.cdc.flow"
    CDC_ANCHOR = "icetide.cdc.anchor"
    CDC_SOURCE = "icetide.cdc.source"
    CDC_UPSTREAM = "icetide.cdc.upstream"
