"""Reading the binlog into change records, one bounded batch at a time.

:class:`BinlogReader` wraps ``pymysqlreplication.BinLogStreamReader`` (non-blocking: the
server ends the stream when it has nothing more). :meth:`BinlogReader.read` starts at a
committed :class:`BinlogPosition` and returns a :class:`BinlogBatch`:

* changes of followed tables as :class:`~icetide.sources.mysql.changes.Change` records
  (``c``/``u``/``d``, before/after images with the binlog's own column names, a sequence
  from file/event/row, the transaction's commit time);
* ``end``: always a transaction boundary, a valid ``start`` for the next batch;
* at most ``max_changes`` changes, rounded up to the end of the last transaction, or
  exactly up to ``until`` (re-reading a planned range);
* a :class:`SchemaChange` instead of rows when a table's TABLE_MAP differs from the
  known schema (:class:`~icetide.sources.mysql.tablemap.SchemaBook`), DDL statements as
  :class:`DdlRecord` values; DROP / RENAME / TRUNCATE TABLE end the batch as ``fatal``.

A purged or invalid start position raises :class:`~icetide.errors.PositionLostError`.
Why schemas come from the binlog and where a batch ends: docs/cdc.md ("Reading the
binlog").
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    BinLogEvent,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from pymysqlreplication.gtid import Gtid, GtidSet
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from icetide.cdc.schema import TableSchema
from icetide.errors import PositionLostError, SourceError
from icetide.sources.mysql.changes import Change, Image, Op
from icetide.sources.mysql.conn import MySqlConnection
from icetide.sources.mysql.ddl import DdlKind, classify_ddl
from icetide.sources.mysql.position import BinlogPosition, merge_gtid, sequence
from icetide.sources.mysql.snapshot import binary_logs, is_mariadb
from icetide.sources.mysql.tablemap import (
    SchemaBook,
    fix_negative_time,
    fractional_time_columns,
    same_shape,
    schema_from_tablemap,
)

log = logging.getLogger(__name__)

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
_EVENTS = [WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, TableMapEvent, XidEvent,
           QueryEvent, RotateEvent, MariadbGtidEvent, GtidEvent]
_IGNORED_QUERY = re.compile(r"^(SAVEPOINT|ROLLBACK\s+TO|RELEASE\s+SAVEPOINT|XA\s)", re.I)
_REQUIRED = {"binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}


FATAL_DDL = ("drop", "rename", "truncate")


@dataclass(frozen=True)
class DdlRecord:
    """DDL on followed tables: kind, text, default schema, and the position after it."""

    tables: tuple[str, ...]
    kind: DdlKind
    query: str
    schema: str
    position: BinlogPosition


@dataclass(frozen=True)
class SchemaChange:
    """A table's rows change shape at ``position`` (a transaction boundary)."""

    table: str
    old: TableSchema
    new: TableSchema
    position: BinlogPosition


@dataclass
class BinlogBatch:
    """Changes in ``[start, end)``; ``caught_up`` when the server had nothing more.

    ``ddl``: column DDL on followed tables inside the range (rename hints, creates).
    ``fatal``: DROP / RENAME / TRUNCATE of a followed table at ``end`` (nothing after it).
    ``schema_change``: the next transaction writes rows of a new shape; ``end`` stops
    before it and the batch has no changes. ``adopted``: tables whose schema was first
    learned from the binlog in this batch (stored in the reader's schema book).
    """

    start: BinlogPosition
    end: BinlogPosition
    changes: list[Change] = field(default_factory=list)
    ddl: list[DdlRecord] = field(default_factory=list)
    fatal: DdlRecord | None = None
    schema_change: SchemaChange | None = None
    adopted: list[str] = field(default_factory=list)
    caught_up: bool = False
    transactions: int = 0


def check_server(conn: MySqlConnection) -> None:
    """Refuse servers whose binlog settings lose information CDC needs."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                    "('log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata')")
        values = {str(k).lower(): str(v).upper() for k, v in cur.fetchall()}
    if values.get("log_bin") != "ON":
        raise SourceError("the server's binary log is off (log_bin=OFF): enable log_bin")
    for name, wanted in _REQUIRED.items():
        have = values.get(name)
        if have is not None and have != wanted:
            raise SourceError(
                f"server variable {name}={have} but CDC needs {name}={wanted}: set it in the "
                f"server config (SET GLOBAL {name}='{wanted}' affects new sessions only)"
            )


def _connect(**kwargs: Any) -> MySqlConnection:
    """pymysql.connect for pymysqlreplication, which still passes the deprecated ``db``."""
    if "db" in kwargs:
        kwargs["database"] = kwargs.pop("db")
    return pymysql.connect(**kwargs)


def _merge(state: str | None, gtid: str) -> str:
    if "-" in gtid and ":" not in gtid:
        return merge_gtid(state, gtid)  # MariaDB domain-server-seq
    return str(GtidSet(state or "") + Gtid(gtid))  # MySQL uuid:n


class _Assembler:
    """Turns a stream of events into a batch that ends on a transaction boundary."""

    def __init__(self, start: BinlogPosition, follows: Callable[[str], bool], book: SchemaBook,
                 max_changes: int, until: BinlogPosition | None) -> None:
        self.batch = BinlogBatch(start, start)
        self.follows, self.book = follows, book
        self.max_changes, self.until = max_changes, until
        self.tx: list[tuple[str, Op, Image | None, Image | None, int]] = []
        self.tx_gtid: str | None = None
        self.in_tx = False
        self.stop = False
        self.checked: set[int] = set()  # table ids whose map matched the book
        self.time_fix: dict[int, tuple[str, ...]] = {}  # table id → TIME(n) columns

    def feed(self, ev: BinLogEvent, file: str, next_pos: int) -> None:
        if isinstance(ev, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
            self._rows(ev, file, next_pos)
        elif isinstance(ev, TableMapEvent):
            self._table_map(ev)
        elif isinstance(ev, XidEvent):
            self._commit(file, next_pos, ev.timestamp)
        elif isinstance(ev, QueryEvent):
            self._query(ev, file, next_pos)
        elif isinstance(ev, MariadbGtidEvent | GtidEvent):
            self.in_tx, self.tx_gtid = True, str(ev.gtid)
        elif isinstance(ev, RotateEvent) and not self.in_tx and not self.tx:
            self.checked.clear()  # table ids are only stable within a file
            end = self.batch.end
            if (ev.next_binlog, ev.position) != (end.file, end.pos):
                self.batch.end = BinlogPosition(ev.next_binlog, ev.position, end.gtid)

    def _table_map(self, ev: TableMapEvent) -> None:
        table = f"{ev.schema}.{ev.table}"
        if ev.table_id in self.checked or not self.follows(table):
            return
        self.time_fix[ev.table_id] = fractional_time_columns(ev)
        known = self.book.known.get(table)
        if known is None:
            self.book.known[table] = schema_from_tablemap(
                ev, self.book.baseline(table), self.book.options)
            self.batch.adopted.append(table)
        else:
            new = schema_from_tablemap(ev, known, self.book.options)
            if table in self.book.seeded and not same_shape(known, new):
                self.book.known[table] = new  # older than the snapshot's schema: adopt
                self.batch.adopted.append(table)
            elif not same_shape(known, new):
                self.stop = True  # end before this transaction: one shape per batch
                if not self.batch.changes:
                    self.batch.schema_change = SchemaChange(table, known, new, self.batch.end)
                return
        self.book.seeded.discard(table)
        self.checked.add(ev.table_id)

    def _rows(self, ev: RowsEvent, file: str, next_pos: int) -> None:
        table = f"{ev.schema}.{ev.table}"
        if not self.follows(table):
            return
        self.in_tx = True
        fix = self.time_fix.get(ev.table_id, ())
        for i, row in enumerate(ev.rows):
            seq = sequence(file, next_pos, i)
            for image in ("values", "before_values", "after_values") if fix else ():
                for name in fix if image in row else ():
                    row[image][name] = fix_negative_time(row[image][name])
            if isinstance(ev, WriteRowsEvent):
                self.tx.append((table, "c", None, row["values"], seq))
            elif isinstance(ev, DeleteRowsEvent):
                self.tx.append((table, "d", row["values"], None, seq))
            else:
                self.tx.append((table, "u", row["before_values"], row["after_values"], seq))

    def _query(self, ev: QueryEvent, file: str, next_pos: int) -> None:
        query = ev.query.strip()
        head = query[:12].upper()
        if head.startswith("BEGIN"):
            self.in_tx = True
        elif head.startswith(("COMMIT", "ROLLBACK")) and not _IGNORED_QUERY.match(query):
            # ROLLBACK is logged only when non-transactional changes stayed applied
            self._commit(file, next_pos, ev.timestamp)
        elif not _IGNORED_QUERY.match(query):
            self._ddl(query, ev.schema, file, next_pos, ev.timestamp)

    def _ddl(
        self, query: str, schema: bytes | str | None, file: str, next_pos: int, ts: int,
    ) -> None:
        db = schema.decode() if isinstance(schema, bytes) else str(schema or "")
        kind, names = classify_ddl(query, db)
        hits = tuple(n for n in names if self.follows(n))
        fatal = kind in FATAL_DDL or (  # CREATE [OR REPLACE] over a followed table
            kind == "create" and "IF NOT EXISTS" not in query.upper()
            and any(h in self.book.known for h in hits))
        if hits and fatal and self.batch.changes:
            self.stop = True  # deliver the changes before it first
            return
        self._commit(file, next_pos, ts)
        if hits:
            record = DdlRecord(hits, kind, query, db, self.batch.end)
            if fatal:
                self.batch.fatal, self.stop = record, True
            else:
                self.batch.ddl.append(record)
                self.book.seeded.difference_update(hits)

    def _commit(self, file: str, next_pos: int, ts: int) -> None:
        self.batch.changes += [Change(t, op, b, a, seq, ts) for t, op, b, a, seq in self.tx]
        gtid = self.batch.end.gtid
        if self.tx_gtid:
            gtid = _merge(gtid, self.tx_gtid)
        self.batch.end = BinlogPosition(file, next_pos, gtid)
        self.batch.transactions += 1
        self.tx, self.tx_gtid, self.in_tx = [], None, False
        if self.until is not None:
            self.stop = self.stop or self.batch.end.key() >= self.until.key()
        elif len(self.batch.changes) >= self.max_changes:
            self.stop = True


class BinlogReader:
    """Reads bounded batches of row changes of ``tables`` from a MySQL/MariaDB binlog.

    ``connection`` holds ``pymysql.connect`` keyword arguments of a user with REPLICATION
    SLAVE and BINLOG MONITOR (MariaDB) / REPLICATION CLIENT (MySQL). ``server_id`` must be
    unique among the server's replicas. ``follows`` decides for tables created later
    (default: only ``tables``). ``use_gtid`` resumes from the position's GTID instead of
    file/pos (after a fail-over to another server of the same replication topology).
    """

    def __init__(
        self, connection: Mapping[str, Any], tables: Collection[str], *, server_id: int,
        follows: Callable[[str], bool] | None = None, use_gtid: bool = False,
        schemas: SchemaBook | None = None,
    ) -> None:
        self.connection = {k: v for k, v in connection.items()
                           if k not in ("database", "db", "autocommit", "cursorclass")}
        self.tables = sorted(tables)
        self.server_id = server_id
        listed = set(self.tables)
        self.follows = follows or listed.__contains__
        self._listed_only = follows is None
        self.schemas = schemas or SchemaBook()
        self.use_gtid = use_gtid
        self._mariadb: bool | None = None
        self._ctl_conn: MySqlConnection | None = None

    def _ctl(self) -> MySqlConnection:
        """The control connection (kept between batches; re-opened when lost)."""
        if self._ctl_conn is not None:
            try:
                self._ctl_conn.ping(reconnect=False)
                return self._ctl_conn
            except pymysql.err.Error:
                self._ctl_conn = None
        self._ctl_conn = pymysql.connect(**{**self.connection, "autocommit": True})
        return self._ctl_conn

    def close(self) -> None:
        """Close the control connection."""
        if self._ctl_conn is not None:
            self._ctl_conn.close()
        self._ctl_conn = None

    def _lost(self, start: BinlogPosition, detail: str) -> PositionLostError:
        commands = "; ".join(f"`icetide cdc resnapshot {t}`" for t in self.tables)
        return PositionLostError(
            f"binlog position {start} can no longer be read: {detail}. The changes after it "
            "are gone (binlog purged or expired), so the tables must be copied again with "
            f"`icetide cdc resnapshot TABLE`: {commands or 'for each table of the flow'}; "
            "keep binlogs longer (binlog_expire_logs_seconds) than a flow may stop"
        )

    def check_available(self, start: BinlogPosition) -> None:
        """PositionLostError when ``start.file`` is no longer on the server."""
        conn = self._ctl()
        if self._mariadb is None:
            self._mariadb = is_mariadb(conn)
        if self.use_gtid and start.gtid:
            return
        files = binary_logs(conn)
        if start.file not in files:
            oldest = files[0] if files else "none"
            raise self._lost(start, f"file {start.file} is not on the server "
                                    f"(oldest binlog is {oldest})")

    def _stream(self, start: BinlogPosition) -> BinLogStreamReader:
        gtid = start.gtid if self.use_gtid and start.gtid else None
        schemas = sorted({t.partition(".")[0] for t in self.tables})
        return BinLogStreamReader(
            connection_settings=dict(self.connection), server_id=self.server_id,
            blocking=False, resume_stream=True, log_file=start.file, log_pos=start.pos,
            auto_position=gtid, is_mariadb=bool(gtid and self._mariadb),
            only_events=_EVENTS, enable_logging=False, pymysql_wrapper=_connect,
            # a table map is parsed once per table id: ids change with every DDL and are
            # not reused while the server runs; a restart starts a new file (map cleared)
            freeze_schema=True,
            # rows of other schemas are skipped unparsed when only listed tables count
            only_schemas=schemas if schemas and self._listed_only else None,
        )

    def seconds_behind(self, start: BinlogPosition, now: float | None = None) -> float:
        """Age of the oldest change after ``start`` (0 when nothing is pending): the
        commit time of the first transaction event the server logged after it."""
        stream = self._stream(start)
        try:
            for ev in stream:
                if isinstance(ev, RotateEvent) or not ev.timestamp:
                    continue  # the stream's synthetic start events carry no commit time
                return max(0.0, (time.time() if now is None else now) - float(ev.timestamp))
            return 0.0
        finally:
            stream.close()

    def read(
        self, start: BinlogPosition, max_changes: int = 10_000,
        until: BinlogPosition | None = None,
    ) -> BinlogBatch:
        """The next batch from ``start`` (see the module docstring)."""
        self.check_available(start)
        if until is not None and until.key() <= start.key():
            return BinlogBatch(start, start)  # an empty range (e.g. a schema-change batch)
        asm = _Assembler(start, self.follows, self.schemas, max_changes, until)
        stream = self._stream(start)
        try:
            for event in stream:
                asm.feed(event, stream.log_file, stream.log_pos)
                if asm.stop:
                    break
            else:
                asm.batch.caught_up = True
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == ER_MASTER_FATAL_ERROR_READING_BINLOG:
                raise self._lost(start, f"server error 1236: {exc.args[-1]}") from None
            raise SourceError(f"reading the binlog from {start} failed: {exc}; check the "
                              "server and the CDC user's REPLICATION SLAVE grant") from exc
        finally:
            stream.close()
        self._check_until(asm.batch, until)
        return asm.batch

    @staticmethod
    def _check_until(batch: BinlogBatch, until: BinlogPosition | None) -> None:
        if until is not None and batch.end.key() != until.key():
            raise SourceError(
                f"re-reading the binlog range {batch.start} → {until} ended at {batch.end}: "
                "the planned end is not a transaction boundary of this server's binlog; "
                "the stored position does not belong to this server"
            )
