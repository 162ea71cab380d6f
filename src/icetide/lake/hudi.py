"""Apache Hudi tables as CDC targets (Spark side), exactly once like the Iceberg ones.

* **One upsert commit per batch**: the batch's ``+I/+U/-D`` rows are written by Hudi's
  datasource as ONE ``upsert`` (deletes are rows with ``_hoodie_is_deleted = true``), record
  key = the table's primary key, ordered by the change's sequence (``_cdc_order``, see
  :data:`ORDERING`): a stored row is only replaced or deleted by a version at least as new.
* **The marker in the commit**: the batch's marker is a write option under
  ``hoodie.datasource.write.commitmeta.key.prefix`` (``icetide.``), so Hudi stores it in
  the commit's *extra metadata*. :func:`last_marker` reads the completed commits newest
  first: a commit a crash left half-written is never completed, never read, and is rolled
  back by Hudi before the next write.
* **Names**: the table lives at ``<catalog warehouse>/<db>.db/<table>`` and, with a Hive
  catalog, is synced to the same metastore as ``<db>.<table>`` (+ ``_ro``/``_rt``).

Which idents are Hudi tables is registered when their flow compiles (:func:`register`):
:func:`icetide.lake.commit.last_marker` asks :func:`registered` first. Every option
icetide sets, and what is not supported yet: docs/cdc.md ("Hudi targets").
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icetide.errors import ConfigError, PipelineError
from icetide.lake.hudi_timeline import MARKER_KEY
from icetide.model.markers import Marker
from icetide.runtime.hudi import HOODIE_CATALOG
from icetide.tables.hudi import TABLE_TYPE

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Write options starting with this land in the commit's extra metadata.
META_PREFIX = "icetide."
DELETED = "_hoodie_is_deleted"
#: The ordering field: the sequence (``decimal(38,0)``) as 38 digits of text. Hudi 1.2.0
#: cannot order by a decimal: merging a stored version (Avro ``fixed``) with a new one
#: (``BigDecimal``) fails with a ClassCastException (docs/stack.md).
ORDERING = "_cdc_order"
OP_COLUMN = "_op"
#: Walked back from the newest completed commit for a flow's marker.
MAX_COMMITS = 10_000
KEYGEN = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
NO_PARTITION = "org.apache.hudi.hive.NonPartitionedExtractor"
#: Hudi's table services after each commit, off: icetide's maintenance runs them.
SERVICES_OFF = {"hoodie.compact.inline": "false", "hoodie.clean.automatic": "false",
                "hoodie.archive.automatic": "false"}
#: No column-stats index in the table's metadata table (Hudi 1.x builds one by default,
#: and the partition-stats index on it): icetide reads without data skipping (:func:`read`),
#: so the index would be write cost only, every commit's stats of every column; and a
#: write whose metadata-table compaction came just before it failed once in its
#: column-stats records (docs/stack.md, "Hudi's column-stats index"). A table property
#: sets it back.
COLUMN_STATS_OFF = {"hoodie.metadata.index.column.stats.enable": "false"}


@dataclass(frozen=True)
class HudiTable:
    """One Hudi target: icetide's name, where it lives, its key and ordering field."""

    ident: str  # catalog.db.table
    path: str
    keys: tuple[str, ...]
    ordering: str
    properties: Mapping[str, str] = field(default_factory=dict)  # the user's hoodie.*
    metastore: str | None = None  # thrift:// URI it is synced to
    #: the stored columns as (name, Spark SQL type), when its flow compiled it: what a
    #: reader sees before the first commit creates the table
    columns: tuple[tuple[str, str], ...] = ()

    @property
    def database(self) -> str:
        return self.ident.split(".")[-2]

    @property
    def name(self) -> str:
        return self.ident.split(".")[-1]

    @property
    def table_type(self) -> str:
        return self.properties.get(TABLE_TYPE, "MERGE_ON_READ")

    def options(self) -> dict[str, str]:
        """The write options of every commit (the user's ``hoodie.*`` after icetide's)."""
        user = {k: v for k, v in self.properties.items() if k != TABLE_TYPE}
        return {
            "hoodie.table.name": self.name,
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.recordkey.field": ",".join(self.keys),
            "hoodie.table.ordering.fields": ORDERING,
            "hoodie.datasource.write.partitionpath.field": "",
            "hoodie.datasource.write.keygenerator.class": KEYGEN,
            "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.commitmeta.key.prefix": META_PREFIX,
            # synced after the commit by sync_metastore (Hudi's own sync refreshes the
            # table by a two-part name in the current catalog, which is icetide's Iceberg one)
            "hoodie.datasource.hive_sync.enable": "false",
            "hoodie.datasource.meta.sync.enable": "false",
            # downstream flows read the table's deletes through Hudi's CDC query
            # (sources/hudi.py); it is a table setting, taken when the table is created
            "hoodie.table.cdc.enabled": "true",
            "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER",
            # compaction, cleaning and archival run in icetide's maintenance
            # (maintainer/hudi.py), which keeps what downstream flows still read; after
            # each commit they would remove it by counts of their own
            **SERVICES_OFF,
            **COLUMN_STATS_OFF,
            **user,
        }


_lock = threading.Lock()
_tables: dict[str, HudiTable] = {}
_synced: set[str] = set()
_writing: dict[str, threading.Lock] = {}


def write_lock(ident: str) -> threading.Lock:
    """The lock a commit to ``ident`` and a maintenance pass over it hold in this process:
    Hudi runs its table services beside ONE writer, not concurrently with its commits."""
    with _lock:
        return _writing.setdefault(ident, threading.Lock())


def register(table: HudiTable) -> None:
    """Make ``table.ident`` known as a Hudi table in this process."""
    with _lock:
        _tables[table.ident] = table


def registered(ident: str) -> HudiTable | None:
    """The Hudi table registered as ``ident``, else ``None`` (an Iceberg table)."""
    with _lock:
        return _tables.get(ident)


def check_session(spark: SparkSession, ident: str) -> None:
    """Refuse a Hudi target in a session without Hudi (``spark.hudi``), naming the fix."""
    if spark.conf.get("spark.sql.catalog.spark_catalog", None) != HOODIE_CATALOG:
        raise ConfigError(
            f"table {ident} is format='hudi' but this SparkSession has no Hudi: set "
            "spark.hudi: true in icetide.yaml (or ICETIDE_SPARK__HUDI=true)")


def default_path(spark: SparkSession, ident: str) -> str:
    """``<warehouse of ident's catalog>/<db>.db/<table>`` (the Hive layout)."""
    catalog, db, name = ident.split(".")
    warehouse = spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", None)
    if not warehouse:
        raise PipelineError(
            f"table {db}.{name}: catalog {catalog!r} has no warehouse to put a Hudi table in: "
            "set catalog.warehouse (ICETIDE_CATALOG__WAREHOUSE)")
    return f"{warehouse.rstrip('/')}/{db}.db/{name}"


def metastore_of(spark: SparkSession, catalog: str) -> str | None:
    """The metastore URI of a Hive catalog (``None`` for other catalog types)."""
    if spark.conf.get(f"spark.sql.catalog.{catalog}.type", None) != "hive":
        return None
    return spark.conf.get(f"spark.sql.catalog.{catalog}.uri", None)


def upsert(spark: SparkSession, df: DataFrame, table: HudiTable,
           summary: Mapping[str, str]) -> None:
    """``df`` (``_op`` = ``+I/+U/-D``) in ONE Hudi commit whose extra metadata is the marker."""
    from pyspark.sql import functions as F

    rows = (df.withColumn(DELETED, F.col(OP_COLUMN) == F.lit("-D")).drop(OP_COLUMN)
            .withColumn(ORDERING, F.lpad(F.col(table.ordering).cast("string"), 38, "0")))
    writer = rows.write.format("hudi").options(**table.options())
    writer.option(MARKER_KEY, json.dumps(dict(summary), sort_keys=True))
    with write_lock(table.ident):
        writer.mode("append").save(table.path)
    if table.metastore is not None and table.ident not in _synced:
        sync_metastore(spark, table)  # once a process: the schema does not change (yet)
        _synced.add(table.ident)


def _meta_client(spark: SparkSession, path: str) -> JavaObject:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(
        spark.sparkContext._jsc.hadoopConfiguration())
    builder = jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
    return builder.setConf(conf).setBasePath(path).build()


def exists(spark: SparkSession, path: str) -> bool:
    """Whether a Hudi table (its ``.hoodie`` directory) is at ``path``."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hpath = jvm.org.apache.hadoop.fs.Path(f"{path.rstrip('/')}/.hoodie")
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(fs.exists(hpath))


def last_marker(spark: SparkSession, table: HudiTable, flow: str) -> Marker | None:
    """The newest marker ``flow`` committed to ``table`` (completed commits only)."""
    if not exists(spark, table.path):
        return None
    timeline = (_meta_client(spark, table.path).getActiveTimeline()
                .getCommitsTimeline().filterCompletedInstants())
    instants = list(timeline.getReverseOrderedInstants().iterator())
    for instant in instants[:MAX_COMMITS]:
        text = timeline.readCommitMetadata(instant).getExtraMetadata().get(MARKER_KEY)
        if text:
            summary = json.loads(str(text))
            if summary.get("icetide.flow") == flow:
                return Marker.from_summary(summary)
    return None


def read(spark: SparkSession, table: HudiTable, as_of: str | None = None) -> DataFrame:
    """The table's rows (snapshot read; ``as_of``: as of that commit, by its requested
    time), without Hudi's ``_hoodie_*`` columns and the ordering field."""
    if table.columns and not exists(spark, table.path):  # declared, not committed yet
        from icetide.tables.sql import quote_ident

        return spark.createDataFrame([], ", ".join(f"{quote_ident(n)} {t}"
                                                   for n, t in table.columns))
    # no column-stats data skipping: Hudi plans it by persisting and unpersisting a
    # Dataset, and an unpersist waits for Spark's cache lock, which the flow's batch cache
    # holds while it waits for this read in a broadcast: the batch deadlocked
    # (ColumnStatsIndexSupport.loadTransposed under CachedRDDBuilder.buildBuffers)
    reader = spark.read.format("hudi").option("hoodie.enable.data.skipping", "false")
    if as_of is not None:
        reader = reader.option("as.of.instant", as_of)
    df = reader.load(table.path)
    return df.select(*[c for c in df.columns if not c.startswith("_hoodie_") and c != ORDERING])


def completed_commits(spark: SparkSession, path: str) -> list[tuple[str, str, JavaObject]]:
    """``(requested, completed, HoodieCommitMetadata)`` of the table's completed writes
    (Hudi's active timeline, through its own meta client)."""
    timeline = (_meta_client(spark, path).getActiveTimeline().getCommitsTimeline()
                .filterCompletedInstants())
    return [(str(i.requestedTime()), str(i.getCompletionTime()), timeline.readCommitMetadata(i))
            for i in timeline.getInstants()]


def table_config(spark: SparkSession, path: str) -> dict[str, str]:
    """The table's ``hoodie.properties`` as Hudi reads them."""
    props = _meta_client(spark, path).getTableConfig().getProps()
    return {str(k): str(props.getProperty(k)) for k in props.stringPropertyNames()}


def find(spark: SparkSession, ident: str) -> HudiTable | None:
    """The Hudi table ``ident`` (``catalog.db.table``) when this session has Hudi and
    there is one at its place in the warehouse (registered by its flow, or found by its
    ``.hoodie`` folder: written by another pipeline); else ``None`` (an Iceberg table)."""
    found = registered(ident)
    if found is not None:
        return found
    if spark.conf.get("spark.sql.catalog.spark_catalog", None) != HOODIE_CATALOG:
        return None
    try:
        path = default_path(spark, ident)
    except PipelineError:
        return None
    if not exists(spark, path):
        return None
    keys = table_config(spark, path).get("hoodie.table.recordkey.fields", "")
    return HudiTable(ident, path, tuple(k for k in keys.split(",") if k), "_cdc_pos")


def sync_metastore(spark: SparkSession, table: HudiTable) -> None:
    """Register (or update the schema of) ``table`` in its Hive Metastore, as
    ``<db>.<table>`` (+ ``_ro``/``_rt`` for merge-on-read), then refresh Spark's view."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None and table.metastore is not None
    props = jvm.java.util.Properties()
    for key, value in {
        "hoodie.datasource.meta.sync.base.path": table.path,
        "hoodie.datasource.hive_sync.mode": "hms",
        "hoodie.datasource.hive_sync.metastore.uris": table.metastore,
        "hoodie.datasource.hive_sync.database": table.database,
        "hoodie.datasource.hive_sync.table": table.name,
        "hoodie.datasource.hive_sync.partition_extractor_class": NO_PARTITION,
        "hoodie.datasource.hive_sync.create_managed_table": "false",
    }.items():
        props.setProperty(key, value)
    hconf = spark.sparkContext._jsc.hadoopConfiguration()
    tool = jvm.org.apache.hudi.hive.HiveSyncTool(props, hconf)
    try:
        tool.syncHoodieTable()
    finally:
        tool.close()
    for suffix in ("", "_ro", "_rt"):
        name = f"spark_catalog.{table.database}.{table.name}{suffix}"
        if spark.catalog.tableExists(name):
            spark.catalog.refreshTable(name)

