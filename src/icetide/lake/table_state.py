"""A table's lifecycle state as ``icetide table suspend|resume|set-freshness`` leave it:
table properties, so it takes effect at the next batch of a running pipeline, survives a
restart and shows in ``icetide status`` and the dashboard (metadata only, no Spark)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.model.keys import TableProperties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class TableState:
    """Whether the table's flows are suspended, and its freshness target set at run time."""

    suspended: bool = False
    freshness_s: float | None = None

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> TableState:
        from icetide.pipelines.spec import parse_seconds

        raw = properties.get(TableProperties.FRESHNESS)
        return cls(properties.get(TableProperties.SUSPENDED, "false").lower() == "true",
                   None if raw is None else parse_seconds(raw, TableProperties.FRESHNESS))


def table_state(spark: SparkSession, ident: str) -> TableState:
    """The current state of ``ident`` (``catalog.db.table``)."""
    from icetide.lake.commit import read_metadata

    return TableState.of(read_metadata(spark, ident).properties)


def _require(spark: SparkSession, ident: str) -> None:
    from icetide.errors import TableError

    if not spark.catalog.tableExists(ident):
        raise TableError(f"table {ident} does not exist: name a table of `icetide tables`")


def set_suspended(spark: SparkSession, ident: str, suspended: bool) -> TableState:
    """Suspend (or resume) the flows into ``ident`` from their next batch on."""
    from icetide.tables.sql import quote_qualified, sql_string

    _require(spark, ident)
    key = sql_string(TableProperties.SUSPENDED)
    if suspended:
        spark.sql(f"ALTER TABLE {quote_qualified(ident)} SET TBLPROPERTIES ({key}='true')")
    else:
        spark.sql(f"ALTER TABLE {quote_qualified(ident)} UNSET TBLPROPERTIES IF EXISTS ({key})")
    return table_state(spark, ident)


def set_freshness(spark: SparkSession, ident: str, freshness: str | None) -> TableState:
    """Set ``ident``'s freshness target (a duration such as ``"30 seconds"``); ``None``:
    back to what the pipeline declares."""
    from icetide.pipelines.spec import parse_seconds
    from icetide.tables.sql import quote_qualified, sql_string

    _require(spark, ident)
    key = sql_string(TableProperties.FRESHNESS)
    if freshness is None:
        spark.sql(f"ALTER TABLE {quote_qualified(ident)} UNSET TBLPROPERTIES IF EXISTS ({key})")
    else:
        parse_seconds(freshness, "freshness")  # refused before anything is written
        spark.sql(f"ALTER TABLE {quote_qualified(ident)} SET TBLPROPERTIES "
                  f"({key}={sql_string(freshness)})")
    return table_state(spark, ident)
