"""``MySqlSource``: MySQL 5.7/8 and MariaDB 10.x tables by snapshot + binlog CDC.

A batch is one table's snapshot chunk range or a binlog range ending on a transaction
boundary (positions: :mod:`.position`). :meth:`MySqlSource.rows` returns it as Spark-ready
tuples per table — the last change per key, with ``_op``/``_pos``/``_ts`` — and
:meth:`MySqlSource.read_tables` as DataFrames; applying them is the flow loop's job.

Contract for the flow loop, per batch:

1. ``info["schema_changes"] = {table: [action, ...]}`` (``create`` for a table created
   after the start) is applied to the targets *before* the batch's rows; a change to a
   known table's shape comes in a batch of its own with no rows. Unsupported changes
   raise :class:`~icetide.errors.SchemaChangeError` from ``plan``.
2. ``info["adopted"]`` lists tables whose schema the source learned from the binlog after
   a restart: compare those targets with :meth:`MySqlSource.batch_schemas`.
3. A batch's ``end`` covers every table the source follows: commit their targets
   together, or give each its own position (docs/cdc.md, "Several tables, one position").

A batch with ``records == 0`` and ``end != start`` only moves past other tables' traffic;
committing it keeps the stored position (and the binlog it pins) fresh.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql

from icetide.cdc.evolution import DropPolicy
from icetide.cdc.schema import TableSchema
from icetide.errors import SourceError, SourceUnavailableError
from icetide.model.positions import BinlogPositionJson
from icetide.model.source import BatchRange, Source
from icetide.model.source_key import SourceKey
from icetide.runtime.retry import Failure, backoff, patience, retrying
from icetide.sources.mysql.binlog import BinlogBatch, BinlogReader, check_server
from icetide.sources.mysql.changes import META_COLUMNS, Change, collapse, snapshot_rows, to_rows
from icetide.sources.mysql.conn import MySqlConnection, Row
from icetide.sources.mysql.filters import TableFilter
from icetide.sources.mysql.position import (
    CdcPosition,
    TableProgress,
    decode_key,
    encode_key,
    sequence,
)
from icetide.sources.mysql.schema import list_tables
from icetide.sources.mysql.snapshot import (
    Method,
    SnapshotView,
    close_view,
    current_position,
    open_view,
    read_chunk,
)
from icetide.sources.mysql.tracker import SchemaTracker
from icetide.sources.mysql.types import DEFAULT_TYPES, TypeOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

log = logging.getLogger(__name__)

Rows = dict[str, list[Row]]
_CACHE_SIZE = 4


@dataclass(frozen=True)
class MySqlSourceConfig:
    """What a MySQL source follows and how. ``connection``: ``pymysql.connect`` kwargs of
    the CDC user (host, port, user, password)."""

    name: str
    connection: Mapping[str, Any] = field(repr=False)
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    server_id: int | None = None  # replica id; default derived from the name
    chunk_size: int = 10_000
    max_records: int = 100_000
    drop_policy: DropPolicy = "keep"
    types: TypeOptions = DEFAULT_TYPES
    snapshot_method: Method = "auto"
    max_view_age: float = 600.0
    use_gtid: bool = False
    retry_timeout: float | None = 300.0  # seconds an unreachable server is retried


def _spark_type(name: str) -> DataType:
    from pyspark.sql import types as T

    simple = {"int": T.IntegerType, "bigint": T.LongType, "string": T.StringType,
              "boolean": T.BooleanType, "float": T.FloatType, "double": T.DoubleType,
              "date": T.DateType, "timestamp": T.TimestampType,
              "timestamp_ntz": T.TimestampNTZType, "binary": T.BinaryType}
    if name in simple:
        return simple[name]()
    precision, scale = name[len("decimal("):-1].split(",")
    return T.DecimalType(int(precision), int(scale))


def spark_schema(schema: TableSchema) -> StructType:
    """The DataFrame schema of a table's rows: its columns, then ``_op, _pos, _ts``."""
    from pyspark.sql.types import StructField, StructType

    key = set(schema.primary_key)
    fields = [StructField(c.name, _spark_type(c.spark_type), c.name not in key)
              for c in schema.columns]
    fields += [StructField(n, _spark_type(t), n != "_op") for n, t in META_COLUMNS]
    return StructType(fields)


#: pymysql error codes of a server that cannot be reached (yet): retried, not fatal.
_UNREACHABLE = frozenset({2002, 2003, 2006, 2013})


def connect_with_retry(config: MySqlSourceConfig, key: str) -> MySqlConnection:
    """Connect as the CDC user; an unreachable server is retried with backoff for
    ``config.retry_timeout`` seconds, then :class:`SourceUnavailableError`."""
    where = f"{config.connection.get('host')}:{config.connection.get('port')}"

    def connect() -> MySqlConnection:
        try:
            return pymysql.connect(**{**config.connection, "autocommit": True})
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] not in _UNREACHABLE:
                raise SourceError(f"cannot connect to MySQL at {where} for source {key}: "
                                  f"{exc}; check host, port and credentials") from exc
            raise

    def give_up(failure: Failure) -> SourceUnavailableError:
        return SourceUnavailableError(
            f"MySQL at {where} unreachable for source {key}: {failure.error} "
            f"({failure.attempts} attempts over {failure.waited:.1f}s); check that it runs; "
            "the source's retry_timeout sets how long to wait")

    def on_retry(failure: Failure, wait: float) -> None:
        log.warning("MySQL at %s unreachable (%s); retry %d in %.1fs", where, failure.error,
                    failure.attempts, wait)

    retry = retrying(pymysql.err.OperationalError, wait=backoff(0.2, 30.0),
                     stop=patience(config.retry_timeout), give_up=give_up, on_retry=on_retry)
    return retry(connect)


class MySqlSource(Source[BinlogPositionJson]):
    """Followed tables of one MySQL/MariaDB server; key ``mysql:<name>``."""

    def __init__(self, config: MySqlSourceConfig) -> None:
        self.config = config
        self.key = str(SourceKey(SourceKey.MYSQL, config.name))
        self.filter = TableFilter(config.include, config.exclude)
        self.server_id = config.server_id or 1000 + zlib.crc32(self.key.encode()) % 2**30
        self._conn: MySqlConnection | None = None
        self._view: SnapshotView | None = None
        self.schemas = SchemaTracker(self._connection, config.types, config.drop_policy)
        self._tables: list[str] | None = None
        self._cache: dict[str, Rows] = {}
        self._info: dict[str, dict[str, object]] = {}
        self._schemas_of: dict[str, dict[str, TableSchema]] = {}
        self._binlog: BinlogReader | None = None

    # --- connections, tables, schemas ------------------------------------------------

    def _connection(self) -> MySqlConnection:
        if self._conn is None or not self._conn.open:
            self._view = None
            self._conn = connect_with_retry(self.config, self.key)
            check_server(self._conn)
        return self._conn

    @property
    def tables(self) -> list[str]:
        """Followed tables (``db.table``), resolved on first use."""
        if self._tables is None:
            self._tables = list_tables(self._connection(), self.filter)
        return self._tables

    def schema(self, table: str) -> TableSchema:
        """The schema of the rows the source returns for ``table`` now (see ``tracker.py``)."""
        return self.schemas.schema(table)

    def spark_schema(self, table: str) -> StructType:
        return spark_schema(self.schema(table))

    def _reader(self) -> BinlogReader:
        if self._binlog is None:
            self._binlog = BinlogReader(
                self.config.connection, self.tables, server_id=self.server_id,
                follows=self.filter.matches, use_gtid=self.config.use_gtid,
                schemas=self.schemas.book)
        self._binlog.tables = self.tables  # for messages; tables created later join
        return self._binlog

    # --- snapshot phase --------------------------------------------------------------

    def _ensure_view(self, pos: CdcPosition) -> SnapshotView:
        conn = self._connection()
        view = self._view
        if view is not None and time.time() - view.opened_at <= self.config.max_view_age:
            return view
        if view is not None:
            close_view(conn)
        self._reader().check_available(pos.binlog)  # fail before copying, not after
        self._view = open_view(conn, self.config.snapshot_method)
        return self._view

    def _close_view(self) -> None:
        if self._view is not None and self._conn is not None and self._conn.open:
            close_view(self._conn)
        self._view = None

    def _finish_snapshot(self) -> None:
        self._close_view()
        for table in self.tables:  # the binlog phase starts with the snapshot's schemas
            self.schemas.book.seed(table, self.schemas.baseline(table))

    def initial_position(self) -> BinlogPositionJson:
        """Open the first snapshot view; its binlog position is where the binlog starts."""
        tables = self.tables
        if not tables:
            log.warning("source %s follows no table yet (%r); starting at the binlog end",
                        self.key, self.filter)
            return CdcPosition("binlog", current_position(self._connection())).to_json()
        self._close_view()
        self._view = open_view(self._connection(), self.config.snapshot_method)
        for table in tables:
            self.schemas.baseline(table)
        return CdcPosition.start_snapshot(self._view.position, tables).to_json()

    def _snapshot_range(
        self, table: str, after: Row | None, limit: int,
        upto: Row | None = None,
    ) -> tuple[list[Row], Row | None, bool]:
        conn, schema = self._connection(), self.schemas.baseline(table)
        rows: list[Row] = []
        done = False
        while len(rows) < limit and not done:
            size = min(self.config.chunk_size, limit - len(rows))
            chunk = read_chunk(conn, schema, after, size, upto=upto)
            rows += chunk.rows
            after, done = chunk.last_key, chunk.done
        return rows, after, done

    def _plan_snapshot(self, start: BinlogPositionJson, pos: CdcPosition, limit: int
            ) -> BatchRange[BinlogPositionJson]:
        progress = pos.current()
        assert progress is not None
        view = self._ensure_view(pos)
        rows, after, done = self._snapshot_range(progress.table, decode_key(progress.after), limit)
        end = pos.advance(TableProgress(
            progress.table, encode_key(after) if after is not None else None,
            progress.rows + len(rows), done))
        self._remember_snapshot(start, end.to_json(), progress.table, rows, view)
        if end.phase == "binlog":
            self._finish_snapshot()
        out = end.to_json()
        return BatchRange(start, out, len(rows), self._info[self._key(start, out)])

    def _remember_snapshot(self, start: BinlogPositionJson, end: BinlogPositionJson, table: str,
                           rows: list[Row], view: SnapshotView) -> None:
        seq = sequence(view.position.file, view.position.pos)
        schema = self.schemas.baseline(table)
        out = snapshot_rows(schema, rows, seq, int(view.opened_at))
        self._remember(start, end, {table: out} if out else {}, {table: schema}, {
            "phase": "snapshot", "table": table, "rows": len(out),
            "view": str(view.position), "method": view.method})

    # --- binlog phase ----------------------------------------------------------------

    def _binlog_rows(self, changes: list[Change]) -> tuple[Rows, dict[str, TableSchema]]:
        by_table: dict[str, list[Change]] = {}
        for ch in changes:
            by_table.setdefault(ch.table, []).append(ch)
        out: Rows = {}
        schemas = {table: self.schema(table) for table in by_table}
        for table, items in by_table.items():
            schema = schemas[table]
            out[table] = to_rows(collapse(items, schema.primary_key), schema)
        return out, schemas

    def _finish_binlog(self, start: BinlogPositionJson, pos: CdcPosition, batch: BinlogBatch
            ) -> BatchRange[BinlogPositionJson]:
        end = pos.at(batch.end).to_json()
        info: dict[str, Any] = {"phase": "binlog", "caught_up": batch.caught_up,
                                "transactions": batch.transactions, "changes": len(batch.changes)}
        info.update(self.schemas.apply(batch))
        created = [t for t, actions in info.get("schema_changes", {}).items()
                   if actions and actions[0]["op"] == "create"]
        if created:
            self._tables = sorted({*self.tables, *created})
        rows, schemas = self._binlog_rows(batch.changes)
        info["rows"] = sum(len(r) for r in rows.values())
        self._remember(start, end, rows, schemas, info)
        return BatchRange(start, end, len(batch.changes), info)

    # --- Source API ------------------------------------------------------------------

    def plan(self, start: BinlogPositionJson, max_records: int | None = None
            ) -> BatchRange[BinlogPositionJson] | None:
        limit = (self.config.max_records if max_records is None
                 else min(max_records, self.config.max_records))
        pos = CdcPosition.from_json(start)
        if pos.phase == "snapshot":
            return self._plan_snapshot(start, pos, limit)
        batch = self._reader().read(pos.binlog, max_changes=limit)
        if batch.end == pos.binlog and not (batch.changes or batch.schema_change or batch.adopted):
            return None
        return self._finish_binlog(start, pos, batch)

    def plan_to(self, start: BinlogPositionJson, end: BinlogPositionJson
            ) -> BatchRange[BinlogPositionJson]:
        s, e = CdcPosition.from_json(start), CdcPosition.from_json(end)
        if s.phase == "binlog":
            if e.phase != "binlog":
                raise SourceError(f"cannot re-plan from binlog position {start!r} back to "
                                  f"snapshot position {end!r}")
            batch = self._reader().read(s.binlog, until=e.binlog)
            return self._finish_binlog(start, s, batch)
        return self._replan_snapshot(start, s, e)

    def _replan_snapshot(self, start: BinlogPositionJson, s: CdcPosition, e: CdcPosition
            ) -> BatchRange[BinlogPositionJson]:
        progress = s.current()
        assert progress is not None
        target = next(t for t in e.tables if t.table == progress.table)
        view = self._ensure_view(s)
        upto = None if target.done else decode_key(target.after)  # done: to the table's end
        rows, _, _ = self._snapshot_range(progress.table, decode_key(progress.after), 2**62, upto)
        end = e.to_json()
        self._remember_snapshot(start, end, progress.table, rows, view)
        if e.phase == "binlog":
            self._finish_snapshot()
        return BatchRange(start, end, len(rows), self._info[self._key(start, end)])

    @staticmethod
    def _key(start: BinlogPositionJson, end: BinlogPositionJson) -> str:
        return json.dumps([start, end], sort_keys=True, default=str)

    def _remember(self, start: BinlogPositionJson, end: BinlogPositionJson, rows: Rows,
                  schemas: dict[str, TableSchema], info: dict[str, object]) -> None:
        key = self._key(start, end)
        self._cache[key], self._schemas_of[key], self._info[key] = rows, schemas, info
        while len(self._cache) > _CACHE_SIZE:
            oldest = next(iter(self._cache))
            del self._cache[oldest], self._schemas_of[oldest], self._info[oldest]

    def rows(self, batch: BatchRange[BinlogPositionJson]) -> Rows:
        """The batch as Spark-ready tuples per table (last change per key), in the column
        order of :meth:`batch_schemas`."""
        key = self._key(batch.start, batch.end)
        if key not in self._cache:
            self.plan_to(batch.start, batch.end)
        return self._cache[key]

    def batch_schemas(self, batch: BatchRange[BinlogPositionJson]) -> dict[str, TableSchema]:
        """The schema of each table's rows in ``batch`` (the one they were converted with)."""
        self.rows(batch)
        return self._schemas_of[self._key(batch.start, batch.end)]

    def read_tables(self, spark: SparkSession, batch: BatchRange[BinlogPositionJson]
            ) -> dict[str, DataFrame]:
        """One DataFrame per table with rows in the batch."""
        schemas = self.batch_schemas(batch)
        return {t: spark.createDataFrame(rows, spark_schema(schemas[t]))
                for t, rows in self.rows(batch).items()}

    def read(self, spark: SparkSession, batch: BatchRange[BinlogPositionJson]) -> DataFrame:
        """The batch of a single-table source (use :meth:`read_tables` for several)."""
        if len(self.tables) != 1:
            raise SourceError(
                f"source {self.key} follows {len(self.tables)} tables {self.tables}; read() "
                "returns one DataFrame: narrow include/exclude to one table or use read_tables()")
        table = self.tables[0]
        schema = self.batch_schemas(batch).get(table) or self.schema(table)
        return spark.createDataFrame(self.rows(batch).get(table, []), spark_schema(schema))

    def lag(self, position: BinlogPositionJson) -> dict[str, object]:
        pos = CdcPosition.from_json(position)
        head = current_position(self._connection())
        same = head.file == pos.binlog.file
        caught_up = same and head.pos <= pos.binlog.pos
        behind = 0.0 if caught_up else self._reader().seconds_behind(pos.binlog)
        return {"phase": pos.phase, "position": str(pos.binlog), "head": str(head),
                "bytes_behind": head.pos - pos.binlog.pos if same else None,
                "seconds_behind": behind}

    def close(self) -> None:
        self._close_view()
        if self._conn is not None:
            self._conn.close()
        if self._binlog is not None:
            self._binlog.close()
        self._conn, self._binlog = None, None
