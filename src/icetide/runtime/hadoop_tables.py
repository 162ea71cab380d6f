"""Read-only access to a Hadoop-catalog warehouse on the local filesystem, without a JVM.

pyiceberg has no Hadoop catalog. A Hadoop catalog is a directory tree: a namespace is a
directory, a table is a directory with ``metadata/v<N>.metadata.json`` files and
``metadata/version-hint.text`` holding the current ``N``. This class offers the read half of
pyiceberg's ``Catalog`` interface (``list_namespaces``, ``list_tables``, ``load_table``) and
returns ``StaticTable`` objects, which pyiceberg and DuckDB read like any other table.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pyiceberg.table import StaticTable, Table

from icetide.errors import ConfigError, TableError

log = logging.getLogger(__name__)

Identifier = tuple[str, ...]
_METADATA_RE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


def local_path(location: str) -> Path:
    """A plain path or ``file:`` URI → local ``Path``; other schemes are refused."""
    parts = urlsplit(location)
    if parts.scheme in ("", "file"):
        return Path(unquote(parts.path) if parts.scheme else location)
    raise ConfigError(
        f"warehouse {location!r} is not on the local filesystem: the JVM-free read path "
        "supports local Hadoop warehouses only; use --engine spark, or a jdbc/rest catalog"
    )


def _as_identifier(value: str | Identifier) -> Identifier:
    return tuple(value.split(".")) if isinstance(value, str) else tuple(value)


def _metadata_files(table_dir: Path) -> list[tuple[int, Path]]:
    meta = table_dir / "metadata"
    if not meta.is_dir():
        return []
    found = []
    for entry in meta.iterdir():
        match = _METADATA_RE.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry))
    return sorted(found)


def current_metadata_file(table_dir: Path) -> Path | None:
    """The current ``v<N>.metadata.json`` of a Hadoop table (version hint, else the newest)."""
    files = _metadata_files(table_dir)
    if not files:
        return None
    hint = table_dir / "metadata" / "version-hint.text"
    try:
        wanted = int(hint.read_text().strip())
    except (OSError, ValueError):
        wanted = None
    by_version = dict(files)
    if wanted is not None and wanted in by_version:
        return by_version[wanted]
    return files[-1][1]


class HadoopDirCatalog:
    """The read-only, JVM-free view of a local Hadoop-catalog warehouse."""

    def __init__(self, name: str, warehouse: str) -> None:
        self.name = name
        self.root = local_path(warehouse)

    def _children(self, namespace: Identifier) -> list[Path]:
        base = self.root.joinpath(*namespace)
        if not base.is_dir():
            return []
        return sorted(
            p for p in base.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
        )

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]:
        """Child namespaces of ``namespace`` (directories that are not tables)."""
        ns = _as_identifier(namespace) if namespace else ()
        return [(*ns, p.name) for p in self._children(ns) if not _metadata_files(p)]

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]:
        """Tables directly inside ``namespace``."""
        ns = _as_identifier(namespace)
        return [(*ns, p.name) for p in self._children(ns) if _metadata_files(p)]

    def load_table(self, identifier: str | Identifier) -> Table:
        """The table at its current metadata version, as a pyiceberg ``StaticTable``."""
        ident = _as_identifier(identifier)
        metadata = current_metadata_file(self.root.joinpath(*ident))
        if metadata is None:
            raise TableError(
                f"table {'.'.join(ident)!r} does not exist in catalog {self.name!r} "
                f"(warehouse {self.root}): check the name with `icetide tables`"
            )
        log.debug("loading %s from %s", ".".join(ident), metadata)
        return StaticTable.from_metadata(str(metadata))
