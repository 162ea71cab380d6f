"""References to change-data-capture sources in pipeline declarations (pure, no I/O).

``create_auto_cdc_flow(source=...)`` takes a dataset name or an icetide source object.
A :class:`CdcRef` is that object for a CDC source declared under ``sources:`` in
``icetide-pipeline.yml``::

    from icetide.sources import mysql
    dp.create_auto_cdc_flow(target="dim_db.products",
                            source=mysql.binlog("shop", table="user_db.products"),
                            keys=["productId"], sequence_by="_pos")

``table`` narrows the pipeline source to one upstream table (the flow follows only it
and keeps its own position); ``include``/``exclude`` (regexes over ``db.table``) follow
several tables in one flow, each into ``<into>.<table name>`` (see
:mod:`icetide.engine.compile.cdc`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from icetide.errors import PipelineError


@dataclass(frozen=True)
class CdcRef:
    """A CDC source of the pipeline, optionally narrowed to some of its tables."""

    source: str
    table: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    into: str | None = None  # target database of the tables matched by include

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source:
            raise PipelineError(f"CDC source name {self.source!r} must be the name of an entry "
                                "under `sources:` in icetide-pipeline.yml, e.g. 'shop'")
        if self.table is not None and (self.include or self.exclude):
            raise PipelineError(f"CDC source {self.source!r}: pass table={self.table!r} or "
                                "include/exclude patterns, not both")
        if self.table is not None and self.table.count(".") != 1:
            raise PipelineError(f"CDC source {self.source!r}: table={self.table!r} must be "
                                "'database.table' as named upstream, e.g. 'user_db.products'")

    @property
    def patterns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Include and exclude regexes this reference narrows the source to."""
        if self.table is not None:
            return (re.escape(self.table),), ()
        return self.include, self.exclude


def binlog(source: str, table: str | None = None, *, include: Sequence[str] = (),
           exclude: Sequence[str] = (), into: str | None = None) -> CdcRef:
    """A MySQL/MariaDB binlog source of the pipeline (``type: mysql`` under ``sources:``)."""
    return CdcRef(source, table, tuple(include), tuple(exclude), into)


def changes(source: str, table: str | None = None, *, include: Sequence[str] = (),
            exclude: Sequence[str] = (), into: str | None = None) -> CdcRef:
    """A Debezium change topic of the pipeline (``type: debezium`` under ``sources:``)."""
    return CdcRef(source, table, tuple(include), tuple(exclude), into)
