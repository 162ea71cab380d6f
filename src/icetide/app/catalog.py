"""The catalog service as the adapters see it: where it is, start, stop, migrate into it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from icetide.config import Settings
from icetide.errors import ConfigError
from icetide.runtime.catalog_migrate import Migrated, RegisteringCatalog, migrate
from icetide.runtime.catalogs import catalog_properties, pyiceberg_catalog
from icetide.runtime.hadoop_tables import HadoopDirCatalog
from icetide.runtime.metastore import service
from icetide.runtime.metastore.site import MetastorePaths


@dataclass(frozen=True)
class CatalogService:
    """The lake's catalog: its type and URI, and for icetide's own metastore its process."""

    name: str
    type: str
    uri: str | None
    warehouse: str
    embedded: bool
    running: bool
    pid: int | None = None
    log: str | None = None

    @property
    def address(self) -> str:
        """Where engines reach it: its URI (the metastore's recorded one), else the
        warehouse (a Hadoop catalog)."""
        return self.uri or self.warehouse


def describe_service(settings: Settings) -> CatalogService:
    """What and where the catalog is; for the embedded metastore whether it runs."""
    cat = settings.catalog
    props = catalog_properties(settings)
    if not service.embedded(settings):
        return CatalogService(cat.name, cat.type, props.get("uri"), settings.warehouse,
                              embedded=False, running=True)
    state = service.running(settings)
    return CatalogService(cat.name, cat.type, service.metastore_uri(settings),
                          settings.warehouse, embedded=True, running=state is not None,
                          pid=state.pid if state else None,
                          log=str(MetastorePaths.of(settings).log))


#: What ``icetide catalog`` says of a glue catalog: no service of icetide's to run.
GLUE_NOTE = ("AWS Glue is the catalog service (configuration only, untested here: "
             "docs/catalogs.md); icetide runs no metastore beside it")


def _need_embedded(settings: Settings, verb: str) -> None:
    if not service.embedded(settings):
        glue = f" ({GLUE_NOTE})" if settings.catalog.type == "glue" else ""
        raise ConfigError(
            f"catalog.type is {settings.catalog.type!r}"
            f"{' with uri ' + repr(settings.catalog.uri) if settings.catalog.uri else ''}: "
            f"there is no icetide metastore to {verb}{glue}; set catalog.type: hive without "
            "a uri (ICETIDE_CATALOG__TYPE=hive) to use the embedded one")


def start_service(settings: Settings) -> CatalogService:
    """Start the home's metastore (detached) unless it runs; returns it running."""
    _need_embedded(settings, "start")
    service.ensure_metastore(settings)
    return describe_service(settings)


def stop_service(settings: Settings) -> CatalogService | None:
    """Stop the home's metastore; ``None`` when it was not running."""
    _need_embedded(settings, "stop")
    before = describe_service(settings)
    return before if service.stop_metastore(settings) is not None else None


def migrate_into_catalog(settings: Settings, warehouse: Path | None = None, *,
                         dry_run: bool = False,
                         progress: Callable[[Migrated], None] | None = None) -> list[Migrated]:
    """Register the Hadoop-catalog tables under ``warehouse`` (default: the home's) into
    the configured catalog, which must not be the Hadoop catalog itself."""
    if settings.catalog.type == "hadoop":
        raise ConfigError(
            "catalog.type is 'hadoop': migrate registers a Hadoop-catalog warehouse into "
            "another catalog; set catalog.type: hive (ICETIDE_CATALOG__TYPE=hive) first")
    source = HadoopDirCatalog(settings.catalog.name, str(warehouse or settings.warehouse))
    target = pyiceberg_catalog(settings)
    if not isinstance(target, RegisteringCatalog):
        raise ConfigError(f"catalog type {settings.catalog.type!r} cannot register tables")
    return migrate(source, target, dry_run=dry_run, progress=progress)
