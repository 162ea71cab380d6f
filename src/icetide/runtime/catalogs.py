"""The one Iceberg catalog of a deployment, as Spark conf and as a JVM-free pyiceberg reader.

Types: ``hadoop`` (a warehouse directory, the embedded default), ``jdbc`` (PostgreSQL; tested),
``rest`` (tested against SeaweedFS's), ``hive``: a metastore at ``catalog.uri``, or without
one icetide's own (:mod:`icetide.runtime.metastore`, started on first use by
:func:`prepare_catalog`), and ``glue`` (AWS Glue: configuration only, no AWS here).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from pyiceberg.table import Table

from icetide.config import CatalogConfig, Settings
from icetide.errors import ConfigError
from icetide.runtime.hadoop_tables import HadoopDirCatalog
from icetide.runtime.metastore.service import embedded, ensure_metastore, metastore_uri
from icetide.runtime.s3 import check_access, iceberg_properties, on_s3, uses_s3

log = logging.getLogger(__name__)

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
JDBC_PREFIX = "jdbc:postgresql://"
GLUE_CATALOG = "org.apache.iceberg.aws.glue.GlueCatalog"
# Storage-partitioned join: bucketed Iceberg tables joined without a shuffle.
SPJ_CONF = {
    "spark.sql.sources.v2.bucketing.enabled": "true",
    "spark.sql.iceberg.planning.preserve-data-grouping": "true",
}

Identifier = tuple[str, ...]


class ReadCatalog(Protocol):
    """The read half of pyiceberg's ``Catalog`` that icetide's query commands use."""

    name: str

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]: ...

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]: ...

    def load_table(self, identifier: str | Identifier) -> Table: ...


def _need_uri(cat: CatalogConfig, schemes: tuple[str, ...], example: str) -> str:
    if not cat.uri or not cat.uri.startswith(schemes):
        raise ConfigError(
            f"catalog.uri {cat.uri!r} is not valid for a {cat.type} catalog: set catalog.uri "
            f"(YAML) or ICETIDE_CATALOG__URI to e.g. {example!r}"
        )
    return cat.uri


def _hadoop(settings: Settings) -> dict[str, str]:
    cat = settings.catalog
    if cat.uri:
        raise ConfigError(
            f"catalog.uri {cat.uri!r} means nothing for a hadoop catalog: remove it, "
            "or set catalog.type to jdbc, rest or hive"
        )
    if on_s3(settings.warehouse):
        raise ConfigError(
            f"a hadoop catalog cannot keep its tables on {settings.warehouse}: it commits by "
            "renaming files, which S3 cannot do atomically; set catalog.type to hive (the "
            "embedded metastore), jdbc or rest")
    return {"warehouse": settings.warehouse}


def _jdbc(settings: Settings) -> dict[str, str]:
    cat = settings.catalog
    uri = _need_uri(cat, (JDBC_PREFIX,), "jdbc:postgresql://127.0.0.1:5432/icetide")
    conf = {"uri": uri, "warehouse": settings.warehouse, "jdbc.schema-version": "V1"}
    if cat.user:
        conf["jdbc.user"] = cat.user
    if cat.password is not None:
        conf["jdbc.password"] = cat.password.get_secret_value()
    return conf


def _rest(settings: Settings) -> dict[str, str]:
    cat = settings.catalog
    conf = {"uri": _need_uri(cat, ("http://", "https://"), "https://rest.example.com/api")}
    if cat.warehouse:
        conf["warehouse"] = cat.warehouse
    if cat.password is not None:
        secret = cat.password.get_secret_value()
        # OAuth2 client credentials "id:secret" with a user, else a bearer token.
        conf.update({"credential": f"{cat.user}:{secret}"} if cat.user else {"token": secret})
    return conf


def _hive(settings: Settings) -> dict[str, str]:
    cat = settings.catalog
    if embedded(settings):  # icetide's own metastore: its warehouse is the home's
        return {"uri": metastore_uri(settings), "warehouse": settings.warehouse}
    conf = {"uri": _need_uri(cat, ("thrift://",), "thrift://metastore:9083")}
    if cat.warehouse:
        conf["warehouse"] = cat.warehouse
    return conf


def _glue(settings: Settings) -> dict[str, str]:
    """AWS Glue through Iceberg's ``GlueCatalog`` (in ``iceberg-aws-bundle``, the jar of
    S3FileIO): configured by ``catalog-impl``, not ``type`` (Iceberg refuses both). The
    tables' files are on S3, the region is ``s3.region``, credentials the AWS chain's."""
    cat = settings.catalog
    if cat.uri:
        raise ConfigError(
            f"catalog.uri {cat.uri!r} means nothing for a glue catalog: Glue is found by the "
            "region (s3.region) and the account of the credentials; remove it "
            "(catalog.properties.glue.id names another account's catalog)")
    if not on_s3(settings.warehouse):
        raise ConfigError(
            f"a glue catalog keeps no files: its tables need an s3:// warehouse, not "
            f"{settings.warehouse!r}; set catalog.warehouse (ICETIDE_CATALOG__WAREHOUSE) to "
            "e.g. 's3://my-bucket/lake'")
    return {"catalog-impl": GLUE_CATALOG, "warehouse": settings.warehouse}


_TYPE_PROPERTIES: dict[str, Callable[[Settings], dict[str, str]]] = {
    "hadoop": _hadoop,
    "jdbc": _jdbc,
    "rest": _rest,
    "hive": _hive,
    "glue": _glue,
}


def catalog_properties(settings: Settings) -> dict[str, str]:
    """Iceberg catalog properties (without the ``spark.sql.catalog.<name>.`` prefix)."""
    cat = settings.catalog
    kind = {} if cat.type == "glue" else {"type": cat.type}  # glue: catalog-impl instead
    props = {**kind, **_TYPE_PROPERTIES[cat.type](settings), "cache-enabled": "false",
             **iceberg_properties(settings)}
    props.update(cat.properties)
    return props


def catalog_conf(settings: Settings) -> dict[str, str]:
    """Spark conf that makes ``settings.catalog.name`` the default, Iceberg-backed catalog.

    ``cache-enabled=false``: flows must see every new snapshot in each micro-batch.
    User ``catalog.properties`` come last and may override anything.
    """
    name = settings.catalog.name
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        "spark.sql.defaultCatalog": name,
        prefix: SPARK_CATALOG_CLASS,
        **SPJ_CONF,
    }
    conf.update({f"{prefix}.{k}": v for k, v in catalog_properties(settings).items()})
    if settings.catalog.type == "hive":  # a lock outlives a dead writer by hive.txn.timeout
        conf["spark.hadoop.iceberg.hive.lock-heartbeat-interval-ms"] = "10000"
    return conf


def prepare_catalog(settings: Settings) -> None:
    """Make the catalog usable: the warehouse reachable (a local one created), then
    icetide's metastore running."""
    prepare_warehouse(settings)
    if embedded(settings):
        ensure_metastore(settings)


def prepare_warehouse(settings: Settings) -> None:
    """Create a local warehouse directory (Iceberg cannot list a missing one); on S3,
    check the credentials before anything is written."""
    if uses_s3(settings):
        check_access(settings)
        return
    if settings.catalog.type not in ("hadoop", "hive"):
        return
    parts = urlsplit(settings.warehouse)
    if parts.scheme in ("", "file"):
        Path(parts.path).mkdir(parents=True, exist_ok=True)


def sqlalchemy_url(settings: Settings) -> str:
    """``jdbc:postgresql://host:port/db`` → a ``postgresql+psycopg2://`` URL with credentials."""
    from sqlalchemy.engine import URL  # imported here: slow, and only jdbc needs it

    cat = settings.catalog
    uri = _need_uri(cat, (JDBC_PREFIX,), "jdbc:postgresql://127.0.0.1:5432/icetide")
    parts = urlsplit(uri[len("jdbc:") :])
    if parts.query:
        log.warning("ignoring JDBC URL parameters %r for the pyiceberg catalog", parts.query)
    url = URL.create(
        "postgresql+psycopg2",
        username=cat.user,
        password=cat.password.get_secret_value() if cat.password is not None else None,
        host=parts.hostname,
        port=parts.port,
        database=parts.path.lstrip("/") or None,
    )
    return url.render_as_string(hide_password=False)


def pyiceberg_catalog(settings: Settings) -> ReadCatalog:
    """A pyiceberg reader of the same tables Spark sees (same catalog name)."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.catalog.sql import SqlCatalog

    cat = settings.catalog
    if cat.type == "hadoop":
        _hadoop(settings)
        return HadoopDirCatalog(cat.name, settings.warehouse)
    if cat.type == "jdbc":
        return SqlCatalog(
            cat.name, **{**cat.properties, "uri": sqlalchemy_url(settings),
                         "warehouse": settings.warehouse}
        )
    prepare_catalog(settings)
    catalog: ReadCatalog = load_catalog(cat.name, **pyiceberg_properties(settings))
    return catalog


def pyiceberg_properties(settings: Settings) -> dict[str, str]:
    """pyiceberg's properties of the catalog (``hive``, ``rest``, ``glue``): Spark's, but a
    Glue catalog by ``type`` (pyiceberg's own, on boto3) instead of a Java class."""
    props = catalog_properties(settings)
    props.pop("cache-enabled", None)
    if settings.catalog.type == "glue":
        props.pop("catalog-impl", None)
        props = {"type": "glue", "glue.region": settings.s3.region, **props}
    return props
