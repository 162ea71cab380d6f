"""What a ``format="hudi"`` table may declare (no Spark): Hudi's own option names
(``hoodie.*``) through ``table_properties``, except those icetide sets itself.

The Spark side is :mod:`icetide.lake.hudi`; docs/cdc.md lists icetide's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping

from icetide.errors import PipelineError

TABLE_TYPE = "hoodie.table.type"
TABLE_TYPES = ("MERGE_ON_READ", "COPY_ON_WRITE")
#: What icetide sets itself: a table property naming one of these is refused.
OWNED = ("hoodie.table.name", "hoodie.datasource.write.recordkey.field",
         "hoodie.datasource.write.precombine.field", "hoodie.table.ordering.fields",
         "hoodie.datasource.write.operation", "hoodie.datasource.write.commitmeta.key.prefix",
         "hoodie.datasource.write.table.type", "hoodie.datasource.hive_sync.enable",
         "hoodie.datasource.meta.sync.enable", "hoodie.base.path")
#: Options of Hudi's compaction, cleaning and archival: icetide's maintenance runs them
#: (consumer-aware, maintainer/hudi.py), so a key starting with one of these is refused.
MAINTAINED = ("hoodie.compact", "hoodie.clean", "hoodie.archive", "hoodie.keep.")


def check_properties(table: str, properties: Mapping[str, str], where: str = "") -> None:
    """Refuse properties a Hudi table of icetide cannot honour, naming the fix (``where``:
    the declaration's ``file:line: ``)."""
    for key in properties:
        if not key.startswith("hoodie."):
            raise PipelineError(
                f"{where}table {table}: table_properties key {key!r} is not a Hudi option "
                "(maintenance= and sort_order= are Iceberg's); a format='hudi' table takes "
                "Hudi's own names (hoodie.*, docs/cdc.md)")
        if key in OWNED:
            raise PipelineError(
                f"{where}table {table}: {key} is set by icetide (record key = primary_key, "
                "ordering = the change's sequence, one upsert per batch, the table's place in the "
                "catalog's warehouse); drop it from table_properties")
        if key.startswith(MAINTAINED):
            raise PipelineError(
                f"{where}table {table}: {key} is for Hudi's compaction, cleaning or archival, "
                "which icetide's maintenance runs (keeping every commit a downstream flow "
                "still reads): drop it and set maintenance.snapshot_retention / retain_last / "
                "interval in icetide.yaml or the pipeline's defaults.maintenance "
                "(docs/maintenance.md)")
    kind = properties.get(TABLE_TYPE, TABLE_TYPES[0])
    if kind not in TABLE_TYPES:
        raise PipelineError(f"{where}table {table}: {TABLE_TYPE}={kind!r} is not a Hudi "
                            f"table type: write one of {', '.join(TABLE_TYPES)}")
