"""The sink of a CDC target stored as a Hudi table (:mod:`icetide.lake.hudi`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.lake.hudi import HudiTable, upsert
from icetide.lake.sinks import Props, WriteResult, resolved

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HudiSink:
    """A CDC target's sink for a Hudi table: one upsert commit carrying the marker."""

    table: HudiTable
    #: the stored columns (upstream + ``_cdc_pos``, ``_ts``) as (name, Spark type)
    columns: tuple[tuple[str, str], ...]
    schema: StructType  # the same, as Spark's schema
    changelog: str | None = None

    def write(self, spark: SparkSession, df: DataFrame, target: str, props: Props,
              sides_done: frozenset[str]) -> WriteResult:
        upsert(spark, df, self.table, resolved(props))
        log.info("hudi %s: committed a batch (%s)", target, self.table.table_type)
        return {}
