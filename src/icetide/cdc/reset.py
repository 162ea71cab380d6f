"""``icetide cdc resnapshot TABLE``: make a CDC flow copy its tables again (JVM side).

Needed when the flow's binlog position can no longer be read (binlog purged or expired:
:class:`~icetide.errors.PositionLostError`). The request is ONE Iceberg commit: a
marker-only snapshot on the flow's anchor table whose position for the CDC source is
``{"phase": "resnapshot", "requested_at": ms}`` (unique per request). Nothing else
changes, so the request either happened or did not; running it twice is harmless.

The flow's next batch starts from that position (:mod:`icetide.cdc.apply`): it
deletes every row of every target of the flow — with ``-D`` changelog rows, in the
loop's usual exactly-once commit order — and ends at a new consistent snapshot
position; the following batches copy the tables again, then stream the binlog from the
snapshot's own position. One position covers all tables of a flow, so all of them are
copied again. Run it while the pipeline is stopped: a running flow that commits after
the request supersedes it (its commit carries the old position); run it again then.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.cdc.apply import resnapshot_position
from icetide.errors import IcetideError
from icetide.lake import commit
from icetide.model.keys import TableProperties
from icetide.model.markers import Marker
from icetide.tables.sql import quote_ident, quote_qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class NotCdcTableError(IcetideError):
    """The table is not maintained by a CDC flow (or the flow never committed)."""


@dataclass(frozen=True)
class ResnapshotRequest:
    """What a re-snapshot request reset."""

    flow: str
    anchor: str
    source: str
    previous: object


def find_cdc_target(spark: SparkSession, catalog: str, upstream: str) -> str | None:
    """The lake table (``catalog.db.table``) a CDC flow fills from upstream ``db.table``."""
    for (namespace,) in spark.sql(f"SHOW NAMESPACES IN {quote_ident(catalog)}").collect():
        rows = spark.sql(f"SHOW TABLES IN {quote_qualified(f'{catalog}.{namespace}')}")
        for row in rows.collect():
            ident = f"{catalog}.{namespace}.{row['tableName']}"
            props = commit.load_table(spark, ident).properties()
            if props.get(TableProperties.CDC_UPSTREAM) == upstream:
                return ident
    return None


def request_resnapshot(spark: SparkSession, ident: str) -> ResnapshotRequest:
    """Reset the position of the CDC flow maintaining ``ident`` (``catalog.db.table``, or
    the upstream ``db.table`` it is filled from)."""
    if not spark.catalog.tableExists(ident):
        catalog, _, upstream = ident.partition(".")
        found = find_cdc_target(spark, catalog, upstream)
        if found is None:
            raise NotCdcTableError(
                f"table {ident} does not exist and no CDC target is filled from {upstream}; "
                "name a CDC target table, e.g. `icetide cdc resnapshot dim_db.products`")
        ident = found
    props = commit.read_metadata(spark, ident).properties
    keys = (TableProperties.CDC_FLOW, TableProperties.CDC_ANCHOR, TableProperties.CDC_SOURCE)
    flow, anchor, source = (props.get(k) for k in keys)
    if not flow or not anchor or not source:
        raise NotCdcTableError(
            f"table {ident} has no {'/'.join(keys)} "
            "properties: it is not maintained by a create_auto_cdc_flow flow")
    marker = commit.last_marker(spark, anchor, flow)
    if marker is None:
        raise NotCdcTableError(
            f"flow {flow!r} has not committed to {anchor} yet: its next run snapshots the "
            "tables anyway; nothing to reset")
    end = {**marker.end, source: resnapshot_position()}
    reset = Marker(flow, marker.end, end, committed_at_ms=int(time.time() * 1000),
                   extra={"cdc.resnapshot": ident})
    commit.commit_marker_only(spark, anchor, reset.to_summary())
    log.info("flow %s: position of %s reset from %s; the next run re-snapshots", flow,
             source, marker.end.get(source))
    return ResnapshotRequest(flow, anchor, source, marker.end.get(source))
