"""The fast single-machine read path: DuckDB ``iceberg_scan`` over each table's current metadata.

No JVM: tables are found with the pyiceberg reader of the catalog, each referenced table becomes
a DuckDB view ``<catalog>.<namespace>.<table>`` over ``iceberg_scan('<metadata.json>')`` (which
applies position deletes and deletion vectors). The DuckDB extensions come from the installed
``duckdb-extension-avro`` / ``duckdb-extension-iceberg`` packages; nothing is downloaded.
Read-only: the views cannot be written. DuckDB SQL quotes identifiers with double quotes.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

import duckdb
import sqlglot
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table
from sqlglot import Token, TokenType, exp
from sqlglot.errors import SqlglotError

from icetide.config import Settings
from icetide.errors import RuntimeSetupError, TableError, listed
from icetide.query.catalog_info import all_tables
from icetide.query.readonly import QueryTimeoutError
from icetide.query.result import QueryResult
from icetide.runtime.catalogs import Identifier, ReadCatalog, pyiceberg_catalog
from icetide.runtime.s3 import KEY_VARS, credentials_hint, prepare_environment, uses_s3

log = logging.getLogger(__name__)

# Load order matters: iceberg needs avro, and autoloading is off.
EXTENSIONS = ("avro", "iceberg")

#: One DuckDB per process with the extensions loaded (loading them costs ~0.2 s, more
#: than a typical query); each query runs on a cursor of it, one query at a time, since
#: its views live in an attached database of the shared instance.
_loaded: duckdb.DuckDBPyConnection | None = None
_lock = threading.Lock()


def extension_file(name: str) -> Path:
    """The ``<name>.duckdb_extension`` shipped by the ``duckdb-extension-<name>`` package."""
    version = duckdb.__version__
    hint = f"pip install duckdb-extension-{name}=={version}"
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or spec.origin is None:
        raise RuntimeSetupError(f"DuckDB extension package for {name!r} is not installed: {hint}")
    path = Path(spec.origin).parent / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise RuntimeSetupError(f"{path} not found (extension/duckdb version mismatch?): {hint}")
    return path


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the avro and iceberg extensions loaded from local files."""
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in EXTENSIONS:
        con.execute(f"LOAD {_literal(str(extension_file(name)))}")
    return con


def local_metadata_path(location: str) -> str:
    """``file:/x/v3.metadata.json`` → ``/x/v3.metadata.json``; other URIs stay as they are."""
    parts = urlsplit(location)
    return unquote(parts.path) if parts.scheme == "file" else location


def register_tables(con: duckdb.DuckDBPyConnection, catalog_name: str,
                    tables: Iterable[tuple[Identifier, Table]]) -> None:
    """Create ``<catalog>.<namespace>.<table>`` views and make ``<catalog>`` the default."""
    con.execute(f"ATTACH ':memory:' AS {_ident(catalog_name)}")
    con.execute(f"USE {_ident(catalog_name)}")
    for ident, table in tables:
        schema = _ident(".".join(ident[:-1]))
        location = local_metadata_path(table.metadata_location)
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        con.execute(
            f"CREATE VIEW {schema}.{_ident(ident[-1])} AS "
            f"SELECT * FROM iceberg_scan({_literal(location)})"
        )
        log.debug("duckdb view %s → %s", ".".join(ident), location)


def table_refs(query: str) -> set[tuple[str, ...]]:
    """The tables ``query`` reads as sqlglot parses it (DuckDB dialect), lower-cased:
    ``(namespace, table)``, or ``(table,)`` when unqualified; names of its CTEs are left
    out. A query sqlglot cannot parse gives each of its names as a ``(word,)``."""
    try:
        tree = sqlglot.parse_one(query, read="duckdb")
    except SqlglotError:
        return {(t.text.lower(),) for t in _tokens(query)
                if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {tuple(p.lower() for p in (t.db, t.name) if p) for t in tree.find_all(exp.Table)
            if t.name and (t.db or t.name.lower() not in ctes)}


def _tokens(query: str) -> list[Token]:
    try:
        return sqlglot.tokenize(query, read="duckdb")
    except SqlglotError:
        return []


def tables_of(query: str, catalog: ReadCatalog) -> list[tuple[Identifier, Table]]:
    """The catalog's tables ``query`` names, loaded (current metadata).

    Fast path: when every table the query reads is written ``namespace.table`` with a
    namespace that exists, those are loaded directly (two catalog calls for one table).
    Otherwise, or when one of them does not load, every table is listed and matched by
    name (:func:`referenced_tables`).
    """
    refs = table_refs(query)
    namespaces = {n[0].lower(): n[0] for n in map(tuple, catalog.list_namespaces())
                  if len(n) == 1}
    guessed = sorted((namespaces[r[0]], r[1]) for r in refs if len(r) == 2 and r[0] in namespaces)
    try:
        if refs and len(guessed) == len(refs):
            return [(ident, catalog.load_table(ident)) for ident in guessed]
    except NoSuchTableError:
        log.debug("not all of %s are tables: listing the catalog", guessed)
    return [(ident, catalog.load_table(ident))
            for ident in referenced_tables(query, all_tables(catalog))]


def missing_tables(query: str, catalog: ReadCatalog) -> list[tuple[str, str]]:
    """The ``namespace.table`` names in ``query`` whose namespace exists but not the
    table (the namespace spelt as the catalog has it)."""
    namespaces = {n[0].lower(): n[0] for n in map(tuple, catalog.list_namespaces())
                  if len(n) == 1}
    missing = []
    for ns, name in sorted(r for r in table_refs(query) if len(r) == 2):
        if ns not in namespaces:
            continue
        try:
            catalog.load_table((namespaces[ns], name))
        except NoSuchTableError:
            missing.append((namespaces[ns], name))
    return missing


def _no_such_table(query: str, catalog: ReadCatalog) -> TableError | None:
    """A :class:`TableError` naming the tables ``query`` reads that do not exist (DuckDB
    would say their schema does not exist, as no view was made in it), else ``None``."""
    missing = missing_tables(query, catalog)
    if not missing:
        return None
    ns = missing[0][0]
    present = sorted(ident[-1] for ident in catalog.list_tables(ns))
    return TableError(
        f"no table {listed(f'{a}.{b}' for a, b in missing)} in catalog {catalog.name}; "
        f"namespace {ns} has: {listed(present)} (`icetide tables` lists every table)")


def referenced_tables(query: str, tables: Iterable[Identifier]) -> list[Identifier]:
    """The ``tables`` whose name ``query`` reads (views are made only for those)."""
    names = {ref[-1] for ref in table_refs(query)}
    return [t for t in tables if t[-1].lower() in names]


def run_duckdb(settings: Settings, query: str, max_rows: int | None = None,
               timeout: float | None = None, *,
               catalog: ReadCatalog | None = None) -> QueryResult:
    """Run a read-only ``query`` over the catalog's tables with DuckDB.

    SQL errors surface as ``duckdb.Error`` (the CLI shows their message); a query still
    running after ``timeout`` seconds is interrupted (:class:`QueryTimeoutError`).
    Pass the ``catalog`` reader a caller already holds (``Context.catalog``), so a query
    does not connect to the catalog (and check its service) anew.
    """
    started = time.perf_counter()
    catalog = catalog if catalog is not None else pyiceberg_catalog(settings)
    with _lock:
        con = _shared(settings).cursor()
        try:
            columns, rows = _run(con, catalog, query, max_rows, timeout)
        finally:
            _detach(con, catalog.name)
            con.close()
    truncated = max_rows is not None and len(rows) > max_rows
    rows = rows[:max_rows] if max_rows is not None else rows
    log.debug("duckdb query returned %d rows in %.2fs", len(rows), time.perf_counter() - started)
    return QueryResult(columns, [tuple(r) for r in rows], truncated)


def _shared(settings: Settings) -> duckdb.DuckDBPyConnection:
    global _loaded
    if _loaded is None:
        _loaded = connect()
    if uses_s3(settings):
        enable_s3(_loaded, settings)
    return _loaded


def enable_s3(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Load httpfs and give it the warehouse's endpoint and the environment's credentials
    (an in-memory secret: never written, replaced on every call)."""
    prepare_environment(settings)
    key, secret = (os.environ.get(v) for v in KEY_VARS)
    if not (key and secret):
        raise RuntimeSetupError(f"the DuckDB path reads S3 with keys from the environment: "
                                f"{credentials_hint(settings)}")
    con.execute(f"LOAD {_literal(str(extension_file('httpfs')))}")
    s3 = settings.s3
    options = {"KEY_ID": key, "SECRET": secret, "REGION": s3.region,
               "URL_STYLE": "path" if s3.path_style_access else "vhost"}
    if os.environ.get("AWS_SESSION_TOKEN"):
        options["SESSION_TOKEN"] = os.environ["AWS_SESSION_TOKEN"]
    if s3.endpoint:
        parts = urlsplit(s3.endpoint)
        options.update(ENDPOINT=parts.netloc, USE_SSL=str(parts.scheme == "https").lower())
    body = ", ".join(f"{k} {v if v in ('true', 'false') else _literal(v)}"
                     for k, v in options.items())
    con.execute(f"CREATE OR REPLACE SECRET icetide_s3 (TYPE s3, {body})")


def _detach(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop this query's views: the next query may see other tables or versions."""
    try:
        con.execute("USE memory")
        con.execute(f"DETACH DATABASE IF EXISTS {_ident(name)}")
    except duckdb.Error as exc:  # a broken shared instance: start afresh next time
        global _loaded
        log.warning("resetting the DuckDB instance: %s", exc)
        _loaded = None


def _run(con: duckdb.DuckDBPyConnection, catalog: ReadCatalog, query: str,
         max_rows: int | None, timeout: float | None) -> tuple[list[str], list[tuple[object, ...]]]:
    timer = threading.Timer(timeout, con.interrupt) if timeout is not None else None
    try:
        register_tables(con, catalog.name, tables_of(query, catalog))
        if timer is not None:
            timer.start()
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows + 1)
    except duckdb.CatalogException as exc:
        missing = _no_such_table(query, catalog)
        if missing is None:
            raise
        raise missing from exc
    except duckdb.InterruptException:
        raise QueryTimeoutError(
            f"the query ran longer than {timeout:g}s and was stopped: add a LIMIT or a "
            "filter, or raise the time limit (dashboard.query_timeout)") from None
    finally:
        if timer is not None:
            timer.cancel()
    return columns, [tuple(r) for r in rows]
