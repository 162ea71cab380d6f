"""The pipeline-level entry of a MySQL source (``sources: {shop: {type: mysql, ...}}``).

A declared MySQL source is not read by itself: each ``create_auto_cdc_flow`` over it
builds its own :class:`~icetide.sources.mysql.source.MySqlSource` (narrowed to the flow's
tables, with its own replication ``server_id``, snapshot view and position) through
:meth:`MySqlDeclaration.follow`. As a :class:`~icetide.model.source.Source` it is inert —
the runner's discovery of query flows plans empty batches of every declared source, and
a MySQL snapshot must not start for that — and reading it from a query function is an
error naming the fix. :meth:`close` closes every source built from it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from icetide.errors import SourceError
from icetide.model.positions import BinlogPositionJson
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey
from icetide.sources.mysql.filters import TableFilter
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class MySqlDeclaration(Source[BinlogPositionJson]):
    """A MySQL/MariaDB server and the tables a pipeline may follow on it."""

    def __init__(self, config: MySqlSourceConfig, unusable: str | None = None) -> None:
        TableFilter(config.include, config.exclude)  # bad patterns fail at load time
        self.config = config
        #: why no flow can follow this source (e.g. its password variable is unset)
        self.unusable = unusable
        self.key = str(SourceKey(SourceKey.MYSQL, config.name))
        self.built: list[MySqlSource] = []

    def follow(self, name: str, include: tuple[str, ...],
               exclude: tuple[str, ...]) -> MySqlSource:
        """A source of its own for one flow (tables: ``include`` minus both excludes)."""
        if self.unusable:
            raise SourceError(self.unusable)
        config = dataclasses.replace(
            self.config, name=f"{self.config.name}:{name}",
            include=include or self.config.include,
            exclude=(*self.config.exclude, *exclude), server_id=None)
        source = MySqlSource(config)
        self.built.append(source)
        return source

    def initial_position(self) -> BinlogPositionJson:
        return {}

    def plan(self, start: BinlogPositionJson, max_records: int | None = None
            ) -> BatchRange[BinlogPositionJson] | None:
        return None

    def plan_to(self, start: BinlogPositionJson, end: BinlogPositionJson
            ) -> BatchRange[BinlogPositionJson]:
        return BatchRange(start, end, 0)

    def read(self, spark: SparkSession, batch: BatchRange[BinlogPositionJson]) -> DataFrame:
        raise SourceError(
            f"MySQL source {self.config.name!r} is read by CDC flows only: declare "
            f"dp.create_auto_cdc_flow(target=..., source=mysql.binlog({self.config.name!r}, "
            "table='db.table'), keys=[...], sequence_by='_pos') and read its target table")

    def lag(self, position: BinlogPositionJson) -> dict[str, object]:
        return {}

    def close(self) -> None:
        for source in self.built:
            source.close()
        self.built.clear()
