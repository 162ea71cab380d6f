"""Which schema each followed table has at the reader's position, and how it evolves.

* The snapshot reads ``information_schema`` (the *baseline*; it is the schema at the
  snapshot's view).
* In the binlog phase the schema of a table is the one of its rows: the first TABLE_MAP
  event seen for a table *adopts* its schema (refined by the baseline, see
  ``tablemap.py``); later maps that differ produce a
  :class:`~icetide.sources.mysql.binlog.SchemaChange`, turned here into evolution
  actions with rename hints from the DDL statements seen since (``evolution.py``).
* A table created after the start (CREATE TABLE matching the filter) is reported as a
  ``create`` action when its first rows arrive.

Known limits (documented for the flow loop): rename hints and pending creates live in
memory — after a restart between a ``RENAME COLUMN`` and the first rows written after it,
the change is seen as drop + add. After a restart the first batch lists the tables whose
schema was adopted from the binlog in ``info["adopted"]``: the flow loop compares the
target's schema with :meth:`SchemaTracker.schema` for those.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from icetide.cdc.evolution import DropPolicy, action_to_json, compose_renames, diff_schemas
from icetide.cdc.schema import TableSchema
from icetide.errors import SchemaChangeError, SourceError
from icetide.sources.mysql.binlog import BinlogBatch, DdlRecord, SchemaChange
from icetide.sources.mysql.conn import MySqlConnection
from icetide.sources.mysql.ddl import parse_renames
from icetide.sources.mysql.filters import split_name
from icetide.sources.mysql.schema import read_schema
from icetide.sources.mysql.tablemap import SchemaBook
from icetide.sources.mysql.types import TypeOptions

log = logging.getLogger(__name__)

Actions = list[dict[str, object]]


class SchemaTracker:
    """Schemas of followed tables for one source (see the module docstring)."""

    def __init__(self, connect: Callable[[], MySqlConnection], options: TypeOptions,
                 drop_policy: DropPolicy) -> None:
        self._connect = connect
        self.options = options
        self.drop_policy: DropPolicy = drop_policy
        self._baseline: dict[str, TableSchema] = {}
        self._pending: dict[str, list[DdlRecord]] = {}
        self.book = SchemaBook(baseline=self._baseline_or_none, options=options)

    def baseline(self, table: str) -> TableSchema:
        """``information_schema``'s schema of ``table`` (cached until DDL on it is seen)."""
        if table not in self._baseline:
            db, name = split_name(table)
            self._baseline[table] = read_schema(self._connect(), db, name, self.options)
        return self._baseline[table]

    def _baseline_or_none(self, table: str) -> TableSchema | None:
        try:
            return self.baseline(table)
        except SourceError:  # dropped since, or no key any more: the binlog's map decides
            return None

    def schema(self, table: str) -> TableSchema:
        """The schema of the rows the source returns for ``table`` now."""
        return self.book.known.get(table) or self.baseline(table)

    def apply(self, batch: BinlogBatch) -> dict[str, object]:
        """Facts of a batch for ``BatchRange.info``; raises SchemaChangeError when the
        batch holds a change icetide cannot apply."""
        if batch.fatal is not None:
            self._refuse(batch.fatal, batch.fatal.tables[0])
        for record in batch.ddl:
            self._note(record)
        changes: dict[str, Actions] = {}
        adopted = []
        for table in batch.adopted:
            if self._created(table):
                changes[table] = [{"op": "create", "schema": self.schema(table).to_json()}]
            else:
                adopted.append(table)
        if batch.schema_change is not None:
            changes[batch.schema_change.table] = self._evolve(batch.schema_change)
        info: dict[str, object] = {}
        if changes:
            info["schema_changes"] = changes
        if adopted:
            info["adopted"] = adopted
        if batch.ddl:
            info["ddl"] = [{"kind": r.kind, "query": r.query, "tables": list(r.tables),
                            "renames": parse_renames(r.query)} for r in batch.ddl]
        return info

    @staticmethod
    def _refuse(record: DdlRecord, table: str) -> None:
        raise SchemaChangeError(
            f"{record.kind.upper()} of followed table {table} at binlog {record.position} "
            f"({record.query!r}) cannot be followed from the binlog; run "
            f"`icetide cdc resnapshot {table}` or exclude the table"
        )

    def _note(self, record: DdlRecord) -> None:
        for table in record.tables:
            self._pending.setdefault(table, []).append(record)
            self._baseline.pop(table, None)

    def _created(self, table: str) -> bool:
        pending = self._pending.get(table, [])
        if any(r.kind == "create" for r in pending):
            self._pending.pop(table)
            return True
        return False

    def _evolve(self, change: SchemaChange) -> Actions:
        table, old, new = change.table, change.old, change.new
        renames: dict[str, str] = {}
        for record in self._pending.get(table, []):
            renames = compose_renames(renames, parse_renames(record.query))
        actions = diff_schemas(table, old.columns, old.primary_key, new.columns,
                               new.primary_key, renames, self.drop_policy)
        self.book.known[table] = new
        self._pending.pop(table, None)
        out = [action_to_json(a) for a in actions]
        log.info("schema of %s changes at %s: %s", table, change.position, out)
        return out
