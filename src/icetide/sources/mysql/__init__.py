"""MySQL 5.7/8 and MariaDB 10.x tables by consistent snapshot + binlog CDC.

Modules, by concern:

* ``filters``   — include/exclude regexes over ``db.table``
* ``types``     — MySQL column type → Spark/Iceberg type and value converters
* ``schema``    — table schemas and primary keys from ``information_schema``
* ``evolution`` — DDL classification and schema diff → evolution actions
* ``position``  — the committed position (snapshot progress / binlog coordinate)
* ``snapshot``  — consistent view + keyset-paginated chunk reads
* ``binlog``    — bounded binlog batches of change records
* ``tablemap``  — schemas of binlog rows from TABLE_MAP events (FULL row metadata)
* ``tracker``   — per-table schema at the reader's position and its evolution
* ``changes``   — last change per key → Spark-ready rows with ``_op``/``_pos``/``_ts``
* ``source``    — ``MySqlSource`` for the generic flow loop
"""

from icetide.cdc import refs as _cdc_ref
from icetide.cdc.schema import TableSchema
from icetide.sources.mysql.binlog import BinlogBatch, BinlogReader, DdlRecord, SchemaChange
from icetide.sources.mysql.changes import META_COLUMNS, Change, collapse, to_rows
from icetide.sources.mysql.filters import TableFilter
from icetide.sources.mysql.position import BinlogPosition, CdcPosition
from icetide.sources.mysql.schema import read_schema
from icetide.sources.mysql.source import MySqlSource, MySqlSourceConfig
from icetide.sources.mysql.types import TypeOptions, spark_type

# assigned after the submodule imports: `mysql.binlog` is the declaration helper
# (icetide.cdc.refs.binlog), not the `binlog` module
binlog = _cdc_ref.binlog

__all__ = [
    "META_COLUMNS",
    "BinlogBatch",
    "BinlogPosition",
    "BinlogReader",
    "CdcPosition",
    "Change",
    "DdlRecord",
    "MySqlSource",
    "MySqlSourceConfig",
    "SchemaChange",
    "TableFilter",
    "TableSchema",
    "TypeOptions",
    "binlog",
    "collapse",
    "read_schema",
    "spark_type",
    "to_rows",
]
