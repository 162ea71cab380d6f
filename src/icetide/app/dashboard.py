"""What the live dashboard shows, as typed data (the web adapter only serializes it).

Everything comes from the same table metadata as ``icetide status`` (pyiceberg, no JVM):
the status rows themselves (:func:`icetide.app.status.collect_status`, unchanged, so the
page and ``icetide status --format json`` agree), plus per table the commits of the last
hour (freshness at each commit, commits per minute), the pipeline's DAG layer by layer
(edges from the pipeline graph and from the source keys the flows' markers record) and
the dead-letter table each flow writes. Recent dead letters and the query box read data
through the DuckDB path; the query box runs read-only statements only
(:func:`icetide.query.readonly.check_read_only`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from icetide.app.status import (
    AnyTable,
    TableStatus,
    dead_letter_tables,
    marker_commits,
    read_markers,
)
from icetide.errors import TableError, listed
from icetide.lake.dlq import DLQ_COMMENT
from icetide.lake.hudi_timeline import HudiTimeline
from icetide.model.markers import Marker
from icetide.model.source_key import SourceKey
from icetide.pipelines.graph import PipelineGraph
from icetide.runtime.catalogs import ReadCatalog

log = logging.getLogger(__name__)

#: Layers of the DAG, left to right.
LAYERS = ("sources", "ODS", "CDC dimensions", "DWD", "DWS", "ADS", "other")
#: How far back the freshness chart and the commit rate look (seconds).
HISTORY_S = 3600.0
#: The window commits per minute are averaged over (seconds).
RATE_WINDOW_S = 300.0
_LAYER_WORDS = {"ods": "ODS", "dwd": "DWD", "dws": "DWS", "ads": "ADS"}
_CDC_SCHEMES = (SourceKey.MYSQL, SourceKey.DEBEZIUM)
#: Source keys naming a lake table (``<kind>:<catalog.db.table>``): an edge between tables.
_LAKE_SCHEMES = (SourceKey.ICEBERG, SourceKey.HUDI)
#: Source keys that name no upstream system (a materialized view's refresh position).
_NOT_SOURCES = (SourceKey.REFRESH,)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@dataclass(frozen=True)
class FreshnessPoint:
    """One flow commit: when it became visible and how old its newest event was then."""

    at_ms: int
    freshness_s: float
    rows: int


@dataclass(frozen=True)
class TableActivity:
    """A table's last hour: commits per minute, freshness at each commit, its sources."""

    table: str
    commits_per_min: float = 0.0
    history: tuple[FreshnessPoint, ...] = ()
    sources: tuple[str, ...] = ()
    dead_letter_table: str | None = None
    #: Rows in the dead-letter table (every batch's, not only the last commit's).
    dead_letters_total: int | None = None


@dataclass(frozen=True)
class DagNode:
    """A source or a table, with its layer and (tables) its freshness state."""

    name: str
    layer: str
    kind: str  # source | table
    state: str = "-"


@dataclass(frozen=True)
class Dag:
    """Nodes (grouped by :data:`LAYERS` order) and ``(upstream, downstream)`` edges."""

    nodes: tuple[DagNode, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()

    def layers(self) -> list[tuple[str, list[str]]]:
        """Non-empty layers in order, each with its node names."""
        out = [(layer, sorted(n.name for n in self.nodes if n.layer == layer))
               for layer in LAYERS]
        return [(layer, names) for layer, names in out if names]


@dataclass(frozen=True)
class DashboardState:
    """Everything the page shows at one moment (times are epoch ms)."""

    generated_ms: int
    pipeline: str | None
    status: tuple[TableStatus, ...]
    activity: Mapping[str, TableActivity] = field(default_factory=dict)
    dag: Dag = Dag()
    #: where engines reach the lake's catalog (the metastore's recorded URI)
    catalog: str | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-friendly form; ``status`` is exactly ``icetide status --format json``."""
        return {
            "generated_ms": self.generated_ms, "pipeline": self.pipeline,
            "catalog": self.catalog,
            "status": [row.to_json() for row in self.status],
            "activity": {name: _activity_json(a) for name, a in self.activity.items()},
            "dag": {"layers": [{"name": layer, "nodes": names}
                               for layer, names in self.dag.layers()],
                    "nodes": [vars(n) for n in self.dag.nodes],
                    "edges": [list(e) for e in self.dag.edges]},
        }


def _activity_json(activity: TableActivity) -> dict[str, object]:
    return {"table": activity.table, "commits_per_min": activity.commits_per_min,
            "history": [vars(p) for p in activity.history], "sources": list(activity.sources),
            "dead_letter_table": activity.dead_letter_table,
            "dead_letters_total": activity.dead_letters_total}


@dataclass(frozen=True)
class DeadLetter:
    """One rejected record: why, where it came from, and its raw value (text)."""

    flow: str | None
    source: str | None
    topic: str | None
    partition: int | None
    offset: int | None
    position: str | None
    raw: str | None
    error: str | None
    source_ts: str | None
    ingested_at: str | None


# --------------------------------------------------------------------------- per table
def _marker_snapshots(table: AnyTable, since_ms: int) -> Iterable[tuple[int, Marker]]:
    """``(commit ms, marker)`` of the commits since ``since_ms``, newest first."""
    for at_ms, marker in marker_commits(table):
        if at_ms < since_ms:
            return
        yield at_ms, marker


def _upstream_keys(marker: Marker) -> list[str]:
    """The source keys of a marker; a materialized view's refresh position names its
    inputs (``{"catalog.db.table": snapshot id}``), given as ``iceberg:`` keys."""
    keys: list[str] = []
    for key, position in marker.end.items():  # hudi:/iceberg: keys name a lake table
        if SourceKey.kind_of(key) == SourceKey.REFRESH and isinstance(position, Mapping):
            keys.extend(str(SourceKey.iceberg(name)) for name in position)
        else:
            keys.append(key)
    return keys


def table_activity(name: str, table: AnyTable, now_ms: int, dead_letter_table: str | None = None,
                   dead_letters_total: int | None = None) -> TableActivity:
    """Commits per minute (last :data:`RATE_WINDOW_S`), freshness per commit (last hour)
    and the source keys the flows' newest markers name."""
    points: list[FreshnessPoint] = []
    recent = 0
    for at_ms, marker in _marker_snapshots(table, now_ms - int(HISTORY_S * 1000)):
        if at_ms >= now_ms - RATE_WINDOW_S * 1000:
            recent += 1
        if marker.max_event_time_ms is not None:
            fresh = max(0.0, (at_ms - marker.max_event_time_ms) / 1000)
            points.append(FreshnessPoint(at_ms, fresh, marker.rows))
    walk = read_markers(table)
    sources = sorted({key for m in walk.per_flow.values() for key in _upstream_keys(m)})
    return TableActivity(name, round(recent / (RATE_WINDOW_S / 60), 2), tuple(reversed(points)),
                         tuple(sources), dead_letter_table, dead_letters_total)


# --------------------------------------------------------------------------- the DAG
def layer_of(name: str, cdc: bool = False) -> str:
    """The layer of table ``db.table``: by the words of its database (``ods_behavior`` →
    ODS, ``st_dws`` → DWS), CDC targets → CDC dimensions, else other."""
    words = re.split(r"[^a-z]+", name.split(".")[0].lower())
    for word in words:
        if word in _LAYER_WORDS:
            return _LAYER_WORDS[word]
    if cdc or any(w.startswith("dim") for w in words):
        return "CDC dimensions"
    return "other"


def _source_edges(activity: Mapping[str, TableActivity], catalog_name: str
                  ) -> tuple[set[tuple[str, str]], set[str], set[str]]:
    """Edges from the markers' source keys; the external sources; tables fed by CDC."""
    edges: set[tuple[str, str]] = set()
    sources: set[str] = set()
    cdc: set[str] = set()
    for table, act in activity.items():
        for key in act.sources:
            parsed = SourceKey.read(key)
            if parsed is not None and parsed.kind in _LAKE_SCHEMES:
                edges.add((parsed.table(catalog_name), table))
                continue
            if parsed is not None and parsed.kind in _NOT_SOURCES:
                continue
            sources.add(key)
            edges.add((key, table))
            if parsed is not None and parsed.kind in _CDC_SCHEMES:
                cdc.add(table)
    return edges, sources, cdc


def build_dag(rows: Sequence[TableStatus], activity: Mapping[str, TableActivity],
              graph: PipelineGraph | None, catalog_name: str,
              side_tables: Iterable[str] = ()) -> Dag:
    """Nodes and edges: the graph's known edges plus those the markers record.
    ``side_tables`` (dead-letter tables: shown with their target) are left out."""
    edges, sources, cdc = _source_edges(activity, catalog_name)
    if graph is not None:
        edges |= set(graph.edges())
        cdc |= {f.target for f in graph.flows.values() if f.kind == "auto_cdc"}
    hidden = set(side_tables)
    edges = {(a, b) for a, b in edges if a not in hidden and b not in hidden}
    rows = [r for r in rows if r.table not in hidden]
    states = {r.table: r.state for r in rows}
    tables = set(states) | {a for a, _ in edges if a not in sources} | {b for _, b in edges}
    nodes = [DagNode(s, "sources", "source") for s in sorted(sources)]
    nodes += [DagNode(t, layer_of(t, t in cdc), "table", states.get(t, "-"))
              for t in sorted(tables)]
    return Dag(tuple(nodes), tuple(sorted(edges)))


# --------------------------------------------------------------------------- the whole page
def collect_dashboard(catalog: ReadCatalog, rows: Sequence[TableStatus],
                      graph: PipelineGraph | None, now_ms: int | None = None,
                      catalog_address: str | None = None,
                      hudi: Mapping[str, HudiTimeline] | None = None) -> DashboardState:
    """The page's data around the status ``rows`` (as ``Context.status()`` returned them);
    ``hudi``: the catalog's Hudi tables by ``db.table`` (read from their timelines)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    dlq = dead_letter_tables(catalog)
    activity: dict[str, TableActivity] = {}
    for row in rows:
        if not row.exists:
            continue
        try:
            table: AnyTable = ((hudi or {}).get(row.table.lower())
                               or catalog.load_table(tuple(row.table.split("."))))
        except (NoSuchTableError, NoSuchNamespaceError):
            continue  # dropped since the status was read
        side = next((dlq[f] for f in row.flows if f in dlq and dlq[f][0] != row.table),
                    (None, None))
        activity[row.table] = table_activity(row.table, table, now, *side)
    name = graph.spec.name if graph is not None else None
    dag = build_dag(rows, activity, graph, catalog.name, {name for name, _ in dlq.values()})
    return DashboardState(now, name, tuple(rows), activity, dag, catalog_address)


def check_dead_letter_table(catalog: ReadCatalog, table: str) -> None:
    """Refuse ``table`` unless it is a dead-letter table, naming the ones there are."""
    def refuse(why: str) -> TableError:
        found = sorted({name for name, _ in dead_letter_tables(catalog).values()})
        return TableError(f"{why}; dead-letter tables: {listed(found)} (e.g. "
                          f"/api/dead-letters?table={found[0] if found else 'db.table_dlq'})")

    if not _NAME.match(table):
        raise refuse(f"dead-letter table {table!r} is not a name like 'ods.clicks_dlq'")
    try:
        loaded = catalog.load_table(tuple(table.split(".")))
    except (NoSuchTableError, NoSuchNamespaceError, TableError):
        raise refuse(f"no table {table} in catalog {catalog.name}") from None
    if loaded.properties.get("comment") != DLQ_COMMENT:
        raise refuse(f"{table} is not a dead-letter table")


def dead_letters_query(table: str, limit: int) -> str:
    """DuckDB SQL for the newest ``limit`` rows of dead-letter table ``table``."""
    if not _NAME.match(table):
        raise TableError(f"dead-letter table {table!r} is not a name like 'ods.clicks_dlq': "
                         "pick one the page lists")
    quoted = ".".join(f'"{part}"' for part in table.split("."))
    return ('SELECT flow, source, topic, "partition", "offset", position, raw, error, '
            f"CAST(source_ts AS VARCHAR), CAST(ingested_at AS VARCHAR) FROM {quoted} "
            f'ORDER BY ingested_at DESC, "offset" DESC NULLS LAST LIMIT {int(limit)}')


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def to_dead_letters(rows: Iterable[Sequence[object]]) -> list[DeadLetter]:
    """Rows of :func:`dead_letters_query` as :class:`DeadLetter` (raw bytes as text)."""
    out = []
    for r in rows:
        out.append(DeadLetter(
            flow=_text(r[0]), source=_text(r[1]), topic=_text(r[2]),
            partition=None if r[3] is None else int(str(r[3])),
            offset=None if r[4] is None else int(str(r[4])), position=_text(r[5]),
            raw=_text(r[6]), error=_text(r[7]), source_ts=_text(r[8]),
            ingested_at=_text(r[9])))
    return out
