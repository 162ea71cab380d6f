"""Table maintenance on Spark: compaction, delete rewrite, manifest rewrite, consumer-aware
snapshot expiry, orphan removal, metadata cap — one pass per table (:class:`Maintainer`).

The policy and the consumers' retention floor are pure (:mod:`icetide.tables.maintenance_policy`);
this package inspects tables through the Java Iceberg API and runs Iceberg's procedures.
"""

from icetide.maintainer.passes import Maintainer
from icetide.maintainer.report import MaintenanceReport

__all__ = ["Maintainer", "MaintenanceReport"]
