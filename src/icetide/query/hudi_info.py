"""Hudi tables of the catalog for ``icetide tables`` and ``describe``, read without a JVM.

Hudi tables are in the catalog because icetide syncs them to the Hive Metastore
(:func:`icetide.lake.hudi.sync_metastore`): a merge-on-read table is registered three
times over one location (``<t>``, ``<t>_ro``, ``<t>_rt``), a copy-on-write one once.
:func:`hudi_tables` asks the metastore for the tables whose ``spark.sql.sources.provider``
is ``hudi`` and names each location once (``db.t``). Other catalog types (hadoop, jdbc,
rest) hold no Hudi table: icetide syncs to a Hive Metastore only, so there are none.

What a Hudi table shows comes from its timeline (:mod:`icetide.lake.hudi_timeline`):
completed commits stand for snapshots (the instant as the snapshot id), the commit's
Avro schema for the schema, ``hoodie.properties`` for the properties. Live rows of a Hudi
table are not in its metadata (a merge-on-read table knows them only by merging its log
files), so they are shown as unknown.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from icetide.lake.hudi_timeline import HudiTimeline, Instant, instant_ms, marker_of, write_totals
from icetide.query.catalog_info import (
    ColumnInfo,
    SnapshotInfo,
    TableDescription,
    TableSummary,
    iso_ms,
)

if TYPE_CHECKING:
    from icetide.config import Settings

log = logging.getLogger(__name__)

PROVIDER = "spark.sql.sources.provider"
#: The suffixes Hudi's sync gives a merge-on-read table's read-optimized and real-time views.
VIEW_SUFFIXES = ("_ro", "_rt")


def metastore_tables(uri: str) -> dict[str, str]:
    """``db.table`` → location of every table of the metastore at ``uri`` that is Hudi's."""
    from hive_metastore.ThriftHiveMetastore import Client
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    parts = urlsplit(uri)
    transport = TTransport.TBufferedTransport(TSocket.TSocket(parts.hostname, parts.port))
    transport.open()
    try:
        client = Client(TBinaryProtocol.TBinaryProtocol(transport))
        found = {}
        for db in client.get_all_databases():
            for table in client.get_table_objects_by_name(db, client.get_all_tables(db)):
                if (table.parameters or {}).get(PROVIDER, "").lower() == "hudi":
                    found[f"{db}.{table.tableName}"] = table.sd.location
        return found
    finally:
        transport.close()


def one_name_per_location(synced: Mapping[str, str]) -> dict[str, str]:
    """Merge-on-read views (``<t>_ro``, ``<t>_rt``) folded into their table ``<t>``."""
    by_location: dict[str, list[str]] = {}
    for name, location in synced.items():
        by_location.setdefault(location, []).append(name)
    named = {}
    for location, names in by_location.items():
        base = min(names, key=lambda n: (len(n), n))
        if len(names) > 1 and base.endswith(VIEW_SUFFIXES):
            base = base[:-3]
        named[base] = location
    return dict(sorted(named.items()))


def hudi_tables(settings: Settings) -> dict[str, str]:
    """``db.table`` → location of the Hudi tables in the lake's catalog (Hive only)."""
    if settings.catalog.type != "hive":
        return {}
    from icetide.runtime.catalogs import catalog_properties, prepare_catalog

    prepare_catalog(settings)
    return one_name_per_location(metastore_tables(catalog_properties(settings)["uri"]))


def _version(timeline: HudiTimeline) -> int:
    return int(timeline.properties.get("hoodie.table.version", "0"))


def hudi_summary(name: str, timeline: HudiTimeline) -> TableSummary:
    """The ``tables`` line of a Hudi table (rows unknown; snapshots = active commits)."""
    writes = timeline.writes()
    last = iso_ms(timeline.committed_ms(writes[-1])) if writes else None
    return TableSummary(name=name, rows=None, snapshots=len(writes), last_commit=last,
                        format_version=_version(timeline),
                        format=f"hudi {timeline.table_type.lower()}")


def hudi_schema(metadata: Mapping[str, Any]) -> list[ColumnInfo]:
    """The Avro schema a commit recorded (``extraMetadata.schema``) as ``describe`` columns."""
    text = (metadata.get("extraMetadata") or {}).get("schema")
    if not text:
        return []
    columns: list[ColumnInfo] = []
    for n, f in enumerate(json.loads(text).get("fields", []), start=1):
        kinds = f["type"] if isinstance(f["type"], list) else [f["type"]]
        shown = [_avro_type(k) for k in kinds if k != "null"]
        columns.append({"id": n, "name": f["name"], "type": " | ".join(shown),
                        "required": "null" not in kinds, "doc": f.get("doc")})
    return columns


def _avro_type(kind: object) -> str:
    """An Avro type as text: ``long``, ``decimal(38,0)``, ``timestamp-micros``, ``record``."""
    if not isinstance(kind, dict):
        return str(kind)
    logical = kind.get("logicalType")
    if logical == "decimal":
        return f"decimal({kind.get('precision')},{kind.get('scale', 0)})"
    return str(logical or kind.get("type"))


def _commit_info(timeline: HudiTimeline, instant: Instant, parent: str | None) -> SnapshotInfo:
    meta = timeline.metadata(instant)
    marker = marker_of(meta)
    summary = {f"hudi.{k}": str(v) for k, v in write_totals(meta).items()}
    summary["hudi.action"] = instant.action
    if marker is not None:
        summary.update(marker.to_summary())
    return {"snapshot_id": int(instant.requested), "parent_id": None if parent is None
            else int(parent), "committed_at": iso_ms(timeline.committed_ms(instant)),
            "operation": str(meta.get("operationType") or instant.action).lower(),
            "summary": summary}


def describe_hudi(name: str, timeline: HudiTimeline, snapshots: int = 5) -> TableDescription:
    """What ``icetide describe`` shows of a Hudi table: its commits stand for snapshots."""
    writes = timeline.writes()
    props = timeline.properties
    recent = [_commit_info(timeline, writes[n], writes[n - 1].requested if n else None)
              for n in range(len(writes) - 1, max(len(writes) - snapshots, 0) - 1, -1)]
    oldest = writes[0] if writes else None
    keys = props.get("hoodie.table.recordkey.fields", "")
    return {
        "table": name, "format": f"hudi {timeline.table_type.lower()}",
        "location": timeline.location, "metadata_location": f"{timeline.location}/.hoodie",
        "format_version": _version(timeline),
        "current_snapshot_id": int(writes[-1].requested) if writes else None, "rows": None,
        "schema": hudi_schema(timeline.metadata(writes[-1])) if writes else [],
        "partition_spec": [{"name": f, "transform": "identity", "source": f}
                           for f in props.get("hoodie.table.partition.fields", "").split(",")
                           if f],
        "sort_order": [], "identifier_fields": [k for k in keys.split(",") if k],
        "properties": dict(sorted(props.items())), "snapshots": recent, "refs": [],
        "time_travel": {"oldest_snapshot_id": int(oldest.requested) if oldest else None,
                        "oldest_committed_at": iso_ms(instant_ms(oldest.completed,
                                                                 timeline.zone))
                        if oldest else None, "snapshots_kept": len(writes)},
    }


def find_hudi(tables: Mapping[str, str], text: str, catalog_name: str) -> str | None:
    """The Hudi table (``db.table``) ``text`` names — ``db.t``, ``<catalog>.db.t``,
    ``spark_catalog.db.t`` or a merge-on-read view ``db.t_rt`` — else ``None``."""
    parts = [p.strip().strip("`\"").lower() for p in text.split(".")]
    if len(parts) == 3 and parts[0] in (catalog_name.lower(), "spark_catalog"):
        parts = parts[1:]
    name = ".".join(parts)
    if name not in tables and name.endswith(VIEW_SUFFIXES) and name[:-3] in tables:
        name = name[:-3]
    return name if name in tables else None


def hudi_named(query: str, tables: Mapping[str, str], catalog_name: str) -> str | None:
    """The first Hudi table (``db.table``) ``query`` names, if any (its table references,
    parsed as Spark SQL; a query that does not parse names none)."""
    import sqlglot
    from sqlglot import exp

    if not tables:
        return None
    try:
        trees = sqlglot.parse(query, read="spark")
    except sqlglot.errors.ParseError:
        return None
    for tree in trees:
        for ref in tree.find_all(exp.Table) if tree is not None else ():
            parts = [p for p in (ref.catalog, ref.db, ref.name) if p]
            found = find_hudi(tables, ".".join(parts), catalog_name)
            if found is not None:
                return found
    return None
