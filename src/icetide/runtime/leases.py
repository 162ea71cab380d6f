"""One writer per flow: an exclusive lease held while a process runs a flow.

Two processes running the same flow (same target table, same flow name) would both plan
the range after the newest marker and both commit it. A lease makes the second one stop
at once with :class:`FlowAlreadyRunning`, naming who holds it. Leases live where every
writer of the catalog can see them and die with their holder (even on ``kill -9``):

* ``hadoop`` catalog on a local warehouse: ``fcntl`` locks on files in
  ``<warehouse>/.icetide-leases/`` (outside every table's location);
* ``jdbc`` catalog on PostgreSQL: session advisory locks in the catalog's database
  (the lock goes when the holder's connection does);
* any other catalog: ``fcntl`` locks under ``<ICETIDE_HOME>/leases/``, which protects the
  writers of one machine. Writers on other machines are caught by the flow loop's commit
  check (:meth:`icetide.flows.loop.FlowLoop.run_batch` re-reads the marker before it
  commits), which narrows the race to the commit itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from icetide.config import Settings
from icetide.errors import IcetideError

if TYPE_CHECKING:
    from psycopg2.extensions import cursor as Cursor

log = logging.getLogger(__name__)


class FlowAlreadyRunning(IcetideError):
    """Another process holds the lease of a flow."""

    def __init__(self, key: str, holder: str) -> None:
        super().__init__(
            f"flow {key} is already running ({holder}); stop that run first, or run other "
            "flows with --flow"
        )
        self.key = key
        self.holder = holder


def holder_id() -> str:
    """Who we are, for the message another writer sees."""
    return f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M:%S')}"


class Leases(Protocol):
    """Takes exclusive leases by key for the duration of a ``with`` block."""

    def hold(self, keys: Sequence[str]) -> contextlib.AbstractContextManager[None]: ...

    def held(self, key: str) -> bool:
        """Whether some process holds ``key`` now (a run of that flow is alive)."""
        ...


class FileLeases:
    """``fcntl`` locks on one file per key in ``folder`` (released by the kernel on exit)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        return self.folder / f"{digest}.lease"

    @contextlib.contextmanager
    def hold(self, keys: Sequence[str]) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            for key in sorted(set(keys)):
                stack.enter_context(self._one(key))
            yield

    def held(self, key: str) -> bool:
        path = self._path(key)
        if not path.exists():
            return False
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    @contextlib.contextmanager
    def _one(self, key: str) -> Iterator[None]:
        fd = os.open(self._path(key), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "unknown"
                raise FlowAlreadyRunning(key, holder) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{holder_id()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


class PostgresLeases:
    """Session advisory locks in the PostgreSQL database of a ``jdbc`` catalog."""

    def __init__(self, dsn: str, user: str | None, password: str | None) -> None:
        self.dsn, self.user, self.password = dsn, user, password

    @staticmethod
    def lock_id(key: str) -> int:
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)

    @contextlib.contextmanager
    def hold(self, keys: Sequence[str]) -> Iterator[None]:
        import psycopg2

        conn = psycopg2.connect(self.dsn, user=self.user, password=self.password,
                                application_name=f"icetide {holder_id()}"[:63])
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                for key in sorted(set(keys)):
                    cur.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_id(key),))
                    row = cur.fetchone()
                    if not (row and row[0]):
                        raise FlowAlreadyRunning(key, self._holder(cur, key))
            yield
        finally:
            conn.close()  # ends the session: every advisory lock it held is released

    def held(self, key: str) -> bool:
        import psycopg2

        conn = psycopg2.connect(self.dsn, user=self.user, password=self.password)
        try:
            with conn.cursor() as cur:
                return self._granted(cur, key)
        finally:
            conn.close()

    def _granted(self, cur: Cursor, key: str) -> bool:
        cur.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND ((classid::bigint << 32) | objid::bigint) = %s", (self.lock_id(key),))
        row = cur.fetchone()
        return bool(row and row[0])

    def _holder(self, cur: Cursor, key: str) -> str:
        cur.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE l.locktype = 'advisory' AND l.granted "
            "AND ((l.classid::bigint << 32) | l.objid::bigint) = %s", (self.lock_id(key),))
        row = cur.fetchone()
        return str(row[0]) if row else "another process"


def lease_key(target: str, flow: str) -> str:
    """The identity of a flow's writes: its target table and its name (as in its markers)."""
    return f"{target}::{flow}"


def leases_for(settings: Settings) -> Leases:
    """The lease store every writer of ``settings``' catalog shares (see module doc)."""
    cat = settings.catalog
    if cat.type == "jdbc" and cat.uri and cat.uri.startswith("jdbc:postgresql:"):
        password = cat.password.get_secret_value() if cat.password else None
        return PostgresLeases(_libpq_dsn(cat.uri), cat.user, password)
    if cat.type == "hadoop":
        parts = urlsplit(settings.warehouse)
        if parts.scheme in ("", "file"):
            return FileLeases(Path(parts.path) / ".icetide-leases")
    return FileLeases(Path(settings.home) / "leases")


def _libpq_dsn(jdbc_uri: str) -> str:
    """``jdbc:postgresql://host:port/db?x=y`` → ``postgresql://host:port/db`` (libpq URI)."""
    uri = jdbc_uri.removeprefix("jdbc:")
    return uri.split("?", 1)[0]
