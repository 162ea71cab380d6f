"""Run SQL on Trino (``icetide sql --engine trino``) with the PyPI ``trino`` client (DB-API).

The Trino is ``trino.uri`` when set, else this home's local server (``icetide trino
start``). Tables are ``namespace.table`` in the catalog ``trino.catalog`` (``iceberg``,
the seed's ``trino-cli --catalog iceberg``). A query that fails is a
:class:`TrinoQueryFailed` naming Trino's error.
"""

from __future__ import annotations

import logging
import time
from contextlib import closing
from urllib.parse import urlsplit

import trino
from trino.dbapi import Connection
from trino.exceptions import TrinoQueryError
from trino.types import NamedRowTuple

from icetide.config import Settings
from icetide.errors import ConfigError, IcetideError, QueryError
from icetide.query.result import QueryResult, plain_value
from icetide.runtime.trino.server import running

log = logging.getLogger(__name__)

#: how long a request to Trino may take (a long query keeps answering with progress)
REQUEST_TIMEOUT_S = 120.0


class TrinoQueryFailed(QueryError):
    """Trino refused or failed the statement (an error in the SQL: exit 1 on the CLI)."""


class TrinoUnavailable(IcetideError):
    """No Trino to ask, or it could not be reached (exit 2: nothing ran)."""


def trino_uri(settings: Settings) -> str:
    """``trino.uri``, else the local server's, else an error saying how to get one."""
    if settings.trino.uri:
        return settings.trino.uri.rstrip("/")
    state = running(settings)
    if state is None:
        raise TrinoUnavailable(
            "no Trino to query: start the local one for this lake (`icetide trino start`) "
            "or set trino.uri (ICETIDE_TRINO__URI) to a running Trino, e.g. http://host:8080")
    return state.uri


def connect(settings: Settings) -> Connection:
    """A DB-API connection to the Trino of ``settings``, its catalog the lake's."""
    cfg = settings.trino
    uri = trino_uri(settings)
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"trino.uri {uri!r} is not an http(s)://host:port URL")
    auth = None
    if cfg.password is not None:
        if parts.scheme != "https":
            raise ConfigError(f"trino.uri {uri!r}: Trino accepts a password over https only")
        auth = trino.auth.BasicAuthentication(cfg.user, cfg.password.get_secret_value())
    return Connection(
        host=parts.hostname, port=parts.port or (443 if parts.scheme == "https" else 80),
        user=cfg.user, catalog=cfg.catalog, http_scheme=parts.scheme, auth=auth,
        request_timeout=REQUEST_TIMEOUT_S)


def _row_fields(value: object) -> dict[str, object] | None:
    if not isinstance(value, NamedRowTuple):
        return None
    names = value.__annotations__["names"]  # the client's record of the field names
    return {str(n): v for n, v in zip(names, value, strict=True)}


def plain(value: object) -> object:
    """Trino's Python values as plain ones: a ROW becomes a dict by field name."""
    return plain_value(value, _row_fields)


def run_trino(settings: Settings, query: str, max_rows: int | None = None) -> QueryResult:
    """Run ``query`` on Trino and fetch at most ``max_rows`` rows (``None``: all)."""
    started = time.perf_counter()
    with closing(connect(settings)) as conn:
        rows, columns = _fetch(conn, settings, query, max_rows)
    truncated = max_rows is not None and len(rows) > max_rows
    rows = rows[:max_rows] if max_rows is not None else rows
    log.debug("trino query returned %d rows in %.2fs", len(rows), time.perf_counter() - started)
    return QueryResult(columns, [tuple(plain(v) for v in row) for row in rows], truncated)


def _fetch(conn: Connection, settings: Settings, query: str,
           max_rows: int | None) -> tuple[list[list[object]], list[str]]:
    try:
        cur = conn.cursor()
        cur.execute(query)
        rows = cur.fetchall() if max_rows is None else cur.fetchmany(max_rows + 1)
        if max_rows is not None and len(rows) > max_rows:
            cur.cancel()  # the rest is not wanted: free Trino of it
        return rows, [d[0] for d in cur.description or []]
    except TrinoQueryError as exc:
        raise TrinoQueryFailed(f"Trino: {exc.error_name}: {exc.message}") from exc
    except (trino.exceptions.OperationalError, trino.exceptions.HttpError, OSError) as exc:
        raise TrinoUnavailable(f"cannot reach Trino at {trino_uri(settings)}: {exc}") from exc
    except trino.exceptions.Error as exc:
        raise TrinoQueryFailed(f"Trino at {trino_uri(settings)}: {exc}") from exc
