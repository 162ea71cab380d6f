"""Consistent initial snapshot: a view with its exact binlog position, read in PK chunks.

:func:`open_view` puts a connection into a read-only ``REPEATABLE READ`` transaction
and returns the binlog position that transaction sees, by ``START TRANSACTION WITH
CONSISTENT SNAPSHOT`` and the server's ``binlog_snapshot_*`` status (MariaDB, Percona;
no lock) or under a brief ``FLUSH TABLES WITH READ LOCK`` (MySQL; needs RELOAD); ``auto``
picks the first where the server has it. Rows are read with keyset pagination in
primary-key order, so a resumed snapshot continues after the last committed key; the
session time zone is UTC. A view holds metadata locks on the tables it read: keep it
short-lived (``max_view_age``). The two methods and why they are consistent: docs/cdc.md
("The consistent snapshot").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import pymysql

from icetide.cdc.schema import TableSchema
from icetide.errors import SourceError
from icetide.sources.mysql.conn import MySqlConnection, Row
from icetide.sources.mysql.position import BinlogPosition
from icetide.sources.mysql.schema import quote, quote_table

log = logging.getLogger(__name__)

Method = Literal["auto", "consistent-snapshot", "flush-lock"]
Progress = Callable[[str, int, Row | None], None]


@dataclass(frozen=True)
class SnapshotView:
    """An open consistent view: its binlog position, how it was opened, when."""

    position: BinlogPosition
    method: Literal["consistent-snapshot", "flush-lock"]
    opened_at: float
    lock_seconds: float = 0.0


@dataclass(frozen=True)
class Chunk:
    """Rows of one chunk (tuples in schema column order) and the last key read."""

    table: str
    rows: list[Row]
    last_key: Row | None
    done: bool


def _one(conn: MySqlConnection, sql: str, args: object = None) -> Row | None:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()


def is_mariadb(conn: MySqlConnection) -> bool:
    row = _one(conn, "SELECT VERSION()")
    return row is not None and "mariadb" in str(row[0]).lower()


def _gtid(conn: MySqlConnection, pos: BinlogPosition) -> str | None:
    if is_mariadb(conn):
        row = _one(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (pos.file, pos.pos))
    else:
        row = _one(conn, "SELECT @@GLOBAL.gtid_executed")
    value = row[0] if row else None
    return str(value) if value else None


def current_position(conn: MySqlConnection) -> BinlogPosition:
    """The server's current binlog end (``SHOW MASTER STATUS``) with its GTID state."""
    try:
        row = _one(conn, "SHOW MASTER STATUS")
    except pymysql.err.ProgrammingError:  # MySQL 8.4 removed the old spelling
        row = _one(conn, "SHOW BINARY LOG STATUS")
    if not row:
        raise SourceError(
            "the server's binary log is off (SHOW MASTER STATUS is empty); enable it with "
            "log_bin, binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL"
        )
    pos = BinlogPosition(str(row[0]), int(str(row[1])))
    return BinlogPosition(pos.file, pos.pos, _gtid(conn, pos))


def binary_logs(conn: MySqlConnection) -> list[str]:
    """Binlog files still on the server, oldest first (needs BINLOG MONITOR / REPLICATION
    CLIENT)."""
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [str(r[0]) for r in cur.fetchall()]


def _prepare(conn: MySqlConnection) -> None:
    with conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _snapshot_status(conn: MySqlConnection) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        return {str(k).lower(): str(v) for k, v in cur.fetchall()}


def _consistent_view(conn: MySqlConnection) -> SnapshotView:
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
    status = _snapshot_status(conn)
    pos = BinlogPosition(status["binlog_snapshot_file"], int(status["binlog_snapshot_position"]))
    pos = BinlogPosition(pos.file, pos.pos, _gtid(conn, pos))
    return SnapshotView(pos, "consistent-snapshot", time.time())


def _locked_view(conn: MySqlConnection) -> SnapshotView:
    started = time.monotonic()
    with conn.cursor() as cur:
        cur.execute("FLUSH TABLES WITH READ LOCK")
        try:
            pos = current_position(conn)
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        finally:
            cur.execute("UNLOCK TABLES")
    held = time.monotonic() - started
    log.info("snapshot view at %s: global read lock held %.1f ms", pos, held * 1000)
    return SnapshotView(pos, "flush-lock", time.time(), held)


def open_view(conn: MySqlConnection, method: Method = "auto") -> SnapshotView:
    """Start a consistent read-only transaction on ``conn`` and return its position."""
    _prepare(conn)
    if method != "flush-lock":
        if "binlog_snapshot_file" in _snapshot_status(conn):
            view = _consistent_view(conn)
            log.info("snapshot view at %s (consistent snapshot, no lock)", view.position)
            return view
        if method == "consistent-snapshot":
            raise SourceError(
                "snapshot method 'consistent-snapshot' needs a server reporting "
                "binlog_snapshot_file (MariaDB, Percona); use method 'auto' or 'flush-lock'"
            )
    return _locked_view(conn)


def close_view(conn: MySqlConnection) -> None:
    """End the view's transaction."""
    with conn.cursor() as cur:
        cur.execute("ROLLBACK")


def _after_predicate(key: list[str]) -> str:
    terms = []
    for i, k in enumerate(key):
        eqs = [f"{p} = %s" for p in key[:i]]
        terms.append("(" + " AND ".join([*eqs, f"{k} > %s"]) + ")")
    return "(" + " OR ".join(terms) + ")"


def _after_args(after: Row) -> list[object]:
    args: list[object] = []
    for i in range(len(after)):
        args += [*after[:i], after[i]]
    return args


def chunk_query(schema: TableSchema, has_after: bool, has_upto: bool = False) -> str:
    """``SELECT cols FROM t [WHERE key > after] [AND NOT key > upto] ORDER BY key LIMIT %s``.

    A composite key ``(a, b)`` > ``(x, y)`` is written ``(a > x) OR (a = x AND b > y)``
    (index-range friendly on every MySQL/MariaDB version); see :func:`chunk_args`.
    """
    cols = ", ".join(quote(c) for c in schema.names)
    key = [quote(k) for k in schema.primary_key]
    conds = ([_after_predicate(key)] if has_after else []) + (
        [f"NOT {_after_predicate(key)}"] if has_upto else [])
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    return (f"SELECT {cols} FROM {quote_table(schema.qualified)}{where} "
            f"ORDER BY {', '.join(key)} LIMIT %s")


def chunk_args(
    after: Row | None, limit: int, upto: Row | None = None
) -> Row:
    """Parameters of :func:`chunk_query`."""
    args = _after_args(after) if after is not None else []
    args += _after_args(upto) if upto is not None else []
    return (*args, limit)


def read_chunk(
    conn: MySqlConnection, schema: TableSchema, after: Row | None, limit: int,
    upto: Row | None = None,
) -> Chunk:
    """The next ``limit`` rows with key > ``after`` (None: from the start) and, when
    ``upto`` is given, key <= ``upto``."""
    sql = chunk_query(schema, after is not None, upto is not None)
    with conn.cursor() as cur:
        cur.execute(sql, chunk_args(after, limit, upto))
        rows = list(cur.fetchall())
    key_idx = [schema.names.index(k) for k in schema.primary_key]
    last = tuple(rows[-1][i] for i in key_idx) if rows else after
    return Chunk(schema.qualified, rows, last, len(rows) < limit)


def iter_chunks(
    conn: MySqlConnection, schema: TableSchema, after: Row | None = None,
    chunk_size: int = 10_000, progress: Progress | None = None,
) -> Iterator[Chunk]:
    """All chunks of a table after ``after`` inside the open view; ``progress(table,
    rows_so_far, last_key)`` is called after each chunk."""
    total = 0
    while True:
        chunk = read_chunk(conn, schema, after, chunk_size)
        total += len(chunk.rows)
        after = chunk.last_key
        if progress is not None:
            progress(schema.qualified, total, after)
        yield chunk
        if chunk.done:
            return
