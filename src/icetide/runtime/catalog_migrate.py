"""Register the tables of a Hadoop-catalog warehouse into another catalog, in place.

Nothing is copied: each table's current ``metadata.json`` is registered under the same
name (``register_table``), so its data files, snapshots and the flows' commit markers
are the target catalog's from then on. Run it with the pipeline stopped; afterwards
only the target catalog may write the tables (a later commit through the Hadoop
catalog would fork the table).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
from pyiceberg.table import Table

from icetide.errors import TableError
from icetide.runtime.hadoop_tables import HadoopDirCatalog

log = logging.getLogger(__name__)

Identifier = tuple[str, ...]
Outcome = Literal["registered", "already registered", "would register"]


@runtime_checkable
class RegisteringCatalog(Protocol):
    """The part of a pyiceberg catalog that migration writes through."""

    def create_namespace(self, namespace: str | Identifier) -> None: ...

    def load_table(self, identifier: str | Identifier) -> Table: ...

    def register_table(self, identifier: str | Identifier, metadata_location: str) -> Table: ...


@dataclass(frozen=True)
class Migrated:
    """One table: where its metadata is and what migration did with it."""

    table: str
    metadata_location: str
    outcome: Outcome


def hadoop_tables(source: HadoopDirCatalog, namespace: Identifier = ()) -> Iterator[Identifier]:
    """Every table of the warehouse, namespaces depth first."""
    if namespace:
        yield from source.list_tables(namespace)
    for child in source.list_namespaces(namespace):
        yield from hadoop_tables(source, child)


def migrate(source: HadoopDirCatalog, target: RegisteringCatalog, *, dry_run: bool = False,
            progress: Callable[[Migrated], None] | None = None) -> list[Migrated]:
    """Register every table of ``source`` into ``target``; already registered ones are kept.

    A name the target already holds for a table at *another* location is an error
    (nothing is overwritten): drop or rename one of them first.
    """
    done: list[Migrated] = []
    for ident in hadoop_tables(source):
        if len(ident) != 2:
            raise TableError(
                f"table {'.'.join(ident)!r} is in a nested namespace, which a Hive metastore "
                "cannot hold: move it to a one-level database (db.table) first")
        table = source.load_table(ident)
        item = _migrate_one(target, ident, table, dry_run)
        done.append(item)
        if progress is not None:
            progress(item)
    return done


def _migrate_one(target: RegisteringCatalog, ident: Identifier, table: Table,
                 dry_run: bool) -> Migrated:
    name, location = ".".join(ident), table.metadata_location
    try:
        existing: Table | None = target.load_table(ident)
    except NoSuchTableError:
        existing = None
    if existing is not None:
        if existing.location() != table.location():
            raise TableError(
                f"table {name!r} is already in the target catalog at another location "
                f"({existing.location()}, not {table.location()}): drop or rename one of "
                "them, then migrate again")
        return Migrated(name, existing.metadata_location, "already registered")
    if dry_run:
        return Migrated(name, location, "would register")
    with contextlib.suppress(NamespaceAlreadyExistsError):
        target.create_namespace(ident[:-1])
    target.register_table(ident, location)
    log.info("registered %s at %s", name, location)
    return Migrated(name, location, "registered")
