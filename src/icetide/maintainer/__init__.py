"""Table maintenance on Spark: compaction, delete rewrite, manifest rewrite, consumer-aware
snapshot expiry, orphan removal, metadata cap — one pass per table (:class:`Maintainer`).

The policy and the consumers' retention floor are pure (:mod:`icetide.tables.maintenance_policy`);
this package inspects tables through the Java Iceberg API and runs Iceberg's procedures;
a Hudi table's pass (compaction, clean, archive) runs Hudi's write client (``hudi``).
"""

from icetide.maintainer.passes import Maintainer
from icetide.maintainer.report import AnyReport, HudiMaintenanceReport, MaintenanceReport

__all__ = ["AnyReport", "HudiMaintenanceReport", "Maintainer", "MaintenanceReport"]
