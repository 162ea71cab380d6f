"""``icetide status``: per table, what its flows last did and how fresh its data is.

Everything comes from table metadata (pyiceberg, no JVM, no data file read): the
current snapshot and the icetide markers in the summaries of its ancestors
(:mod:`icetide.model.markers`). Per table:

* last commit time, rows in the last flow commit, live rows (from snapshot totals);
* data freshness: now − the newest event time reflected (``icetide.max-event-time`` of
  the newest marker carrying one), judged against the freshness target (the pipeline's,
  else the one the flow recorded) with :func:`~icetide.pipelines.freshness.freshness_status`;
  a table no process runs is judged by the worst freshness its commits achieved over a
  window of them (:mod:`icetide.app.window`: its last minute, or the window asked for);
* the refresh mode and achieved freshness recorded by the last commit;
* dead letters: those of the last commit, and those the table's dead-letter tables hold
  (found by their comment, :data:`~icetide.lake.dlq.DLQ_COMMENT`; live rows);
* expectation counts of the last commit;
* source lag per flow from its committed position (:mod:`icetide.app.lag`), every source
  asked at once and for :data:`~icetide.app.lag.LAG_PATIENCE_S` at most.

A Hudi table (synced to the same metastore) is read from its timeline instead
(:class:`~icetide.lake.hudi_timeline.HudiTimeline`): its completed commits carry the
same markers, so flows, positions, lag and freshness come out the same way; its live
rows are unknown (not in its metadata) and its last maintenance is its newest
compaction, clean or clustering.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from icetide.app.lag import LagProbe, LagProbes, SourceLag
from icetide.app.window import FreshnessWindow, freshness_window
from icetide.engine.pacing import FreshnessTarget
from icetide.engine.quality import expectation_counts
from icetide.lake.dlq import DLQ_COMMENT
from icetide.lake.flow_errors import flow_errors
from icetide.lake.hudi_timeline import HudiTimeline
from icetide.lake.table_state import TableState
from icetide.model.keys import MarkerExtra, TableProperties
from icetide.model.last_pass import LastPass
from icetide.model.markers import Marker
from icetide.pipelines.freshness import freshness_status
from icetide.pipelines.graph import PipelineGraph
from icetide.query.catalog_info import all_tables, live_rows
from icetide.runtime.catalogs import ReadCatalog

#: Snapshots inspected per table for markers (metadata only; newest first).
MAX_WALK = 1_000
#: Hudi instants that are table services (their completion is a maintenance time).
HUDI_SERVICES = ("clean", "compaction", "logcompaction", "clustering")

#: A table as status reads it: Iceberg (pyiceberg) or Hudi (its timeline).
AnyTable = Table | HudiTimeline


@dataclass(frozen=True)
class TableStatus:
    """One row of ``icetide status``; times are epoch ms, durations seconds."""

    table: str
    exists: bool = True
    #: iceberg, or hudi merge_on_read / hudi copy_on_write
    format: str = "iceberg"
    flows: tuple[str, ...] = ()
    last_commit_ms: int | None = None
    rows_last_commit: int | None = None
    rows_total: int | None = None
    newest_event_ms: int | None = None
    freshness_s: float | None = None
    achieved_s: float | None = None
    target_s: float | None = None
    warn_s: float | None = None
    state: str = "-"  # ok | warn | fail | - (no target or no event time)
    mode: str | None = None
    #: Wall seconds of the newest flow batch committed (plan → commit).
    batch_s: float | None = None
    #: dead letters the newest commit sent to the dead-letter table
    dead_letters: int | None = None
    #: rows the dead-letter tables of this table's flows hold (None: it has none)
    dead_letters_total: int | None = None
    dropped: int | None = None
    expectations: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    lag: tuple[SourceLag, ...] = ()
    #: Flows that stopped on an error since the newest commit: flow → message.
    errors: Mapping[str, str] = field(default_factory=dict)
    #: running (a process holds a flow's lease), stopped, or unknown (not asked)
    activity: str = "unknown"  # running | stopped | suspended | unknown
    #: whether the sources hold data not yet committed (None: unknown)
    pending: bool | None = None
    storage: TableStorage | None = None
    #: the Spark master and executors (``id@host:port``) of the newest commit
    master: str | None = None
    executors: tuple[str, ...] = ()
    #: the commits a stopped table is judged by (:mod:`icetide.app.window`)
    window: FreshnessWindow | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-friendly form."""
        data = asdict(self)
        data["flows"] = list(self.flows)
        data["lag"] = [asdict(item) for item in self.lag]
        data["executors"] = list(self.executors)
        return data


@dataclass(frozen=True)
class TableStorage:
    """The files behind a table (current snapshot totals) and its maintenance."""

    data_files: int | None = None
    avg_file_bytes: int | None = None
    delete_files: int | None = None
    snapshots: int = 0
    #: When ``icetide maintain`` or a run's upkeep last passed over it, or a compaction
    #: (a ``replace`` commit, e.g. by ``icetide call``) last rewrote it (epoch ms).
    last_maintenance_ms: int | None = None


def table_storage(table: Table) -> TableStorage:
    """Data files, average size, delete files, snapshots, last maintenance (metadata only)."""
    current = table.current_snapshot()
    props = (current.summary.additional_properties
             if current is not None and current.summary is not None else {})

    def number(key: str) -> int | None:
        value = props.get(key)
        return int(value) if value not in (None, "") else None

    files, size = number("total-data-files"), number("total-files-size")
    return TableStorage(
        data_files=files, avg_file_bytes=size // files if files and size is not None else None,
        delete_files=number("total-delete-files"), snapshots=len(table.metadata.snapshots),
        last_maintenance_ms=_last_maintenance(table))


def _last_maintenance(table: Table) -> int | None:
    """The newer of icetide's last maintenance pass (``icetide maintain``, a run's maintenance)
    and the newest rewrite commit (operation ``replace``: a compaction, also one run by
    hand with ``icetide call system.rewrite_data_files(...)``)."""
    recorded = LastPass.parse(table.properties.get(TableProperties.MAINTENANCE_LAST)).at_ms
    times = [recorded] if recorded is not None else []
    times += [s.timestamp_ms for s in table.metadata.snapshots
              if s.summary is not None and s.summary.operation.value == "replace"]
    return max(times, default=None)


@dataclass
class _Walk:
    """What the newest markers of a table say."""

    latest: Marker | None = None
    per_flow: dict[str, Marker] = field(default_factory=dict)
    newest_event_ms: int | None = None
    #: When the snapshot holding that newest event became visible (its commit time).
    newest_event_commit_ms: int | None = None
    #: (commit ms, newest event ms) of every marker carrying an event time, newest first
    events: list[tuple[int, int]] = field(default_factory=list)


def hudi_storage(timeline: HudiTimeline) -> TableStorage:
    """Commits kept and the last table service (compaction, clean, clustering) of a
    Hudi table; its files are not counted (no totals in its metadata)."""
    writes = timeline.writes()
    services = [timeline.committed_ms(i) for i in timeline.instants()
                if i.action in HUDI_SERVICES or (i.action == "commit"
                                                 and timeline.table_type == "MERGE_ON_READ")]
    return TableStorage(snapshots=len(writes), last_maintenance_ms=max(services, default=None))


def _ancestors(table: Table) -> Iterator[Snapshot]:
    snap = table.current_snapshot()
    seen = 0
    while snap is not None and seen < MAX_WALK:
        yield snap
        parent = snap.parent_snapshot_id
        snap = table.snapshot_by_id(parent) if parent is not None else None
        seen += 1


def marker_commits(table: AnyTable) -> Iterator[tuple[int, Marker]]:
    """``(commit time ms, marker)`` of the table's commits carrying one, newest first
    (Iceberg: the current snapshot's ancestors; Hudi: the completed commits)."""
    if isinstance(table, HudiTimeline):
        for n, (instant, found) in enumerate(table.markers()):
            if n >= MAX_WALK:
                return
            yield table.committed_ms(instant), found
        return
    for snap in _ancestors(table):
        summary = snap.summary.additional_properties if snap.summary is not None else {}
        marker = Marker.from_summary(summary)
        if marker is not None:
            yield snap.timestamp_ms, marker


def read_markers(table: AnyTable) -> _Walk:
    """The newest marker, the newest per flow and the newest event time, newest first."""
    walk = _Walk()
    for at_ms, marker in marker_commits(table):
        walk.latest = walk.latest or marker
        walk.per_flow.setdefault(marker.flow, marker)
        if marker.max_event_time_ms is None:
            continue
        walk.events.append((at_ms, marker.max_event_time_ms))
        if walk.newest_event_ms is None:
            walk.newest_event_ms = marker.max_event_time_ms
            walk.newest_event_commit_ms = at_ms
    return walk


def _opt_int(value: str | None) -> int | None:
    return None if value is None else int(value)


def _ms_to_s(value: str | None) -> float | None:
    return None if value in (None, "") else int(value) / 1000


def _target(marker: Marker | None, declared: FreshnessTarget | None,
            set_at_run_time: float | None = None) -> FreshnessTarget:
    """The table's target: set at run time (it wins), else declared, else recorded."""
    if set_at_run_time is not None:
        return replace(_target(marker, declared), target_s=set_at_run_time)
    if declared is not None and (declared.target_s or declared.warn_s):
        return declared
    extra = marker.extra if marker is not None else {}
    return FreshnessTarget(_ms_to_s(extra.get(MarkerExtra.FRESHNESS_TARGET_MS)),
                           _ms_to_s(extra.get(MarkerExtra.FRESHNESS_WARN_MS)))


def _lag(walk: _Walk, probe: LagProbe | None) -> tuple[SourceLag, ...]:
    if probe is None:
        return ()
    found: list[SourceLag] = []
    for marker in walk.per_flow.values():
        for key, position in sorted(marker.end.items()):
            lag = probe(key, position)
            if lag is not None:
                found.append(lag)
    return tuple(found)


def _achieved(walk: _Walk) -> float | None:
    """The freshness the newest data had when it became visible: the commit time of its
    snapshot (not the time the batch was ready, which MERGE commits come seconds after)
    minus its newest event time."""
    if walk.newest_event_ms is None or walk.newest_event_commit_ms is None:
        return None
    return max(0.0, (walk.newest_event_commit_ms - walk.newest_event_ms) / 1000)


#: ``flow -> running?`` (a process holds its lease); None: cannot tell
RunningProbe = Callable[[str], "bool | None"]


def _activity(flows: Sequence[str], running: RunningProbe | None) -> str:
    if running is None or not flows:
        return "unknown"
    answers = [running(f) for f in flows]
    if any(answers):
        return "running"
    return "stopped" if all(a is False for a in answers) else "unknown"


def _pending(lags: Sequence[SourceLag]) -> bool | None:
    if not lags or any(item.error is not None or item.behind is None for item in lags):
        return None
    return any((item.behind or 0) > 0 for item in lags)


def _committed(window: FreshnessWindow | None, achieved: float | None) -> float | None:
    """What a stopped table is judged by: the worst freshness its commits achieved in the
    window, else (no commit in it) what its newest data had when committed."""
    if window is not None and window.worst_s is not None:
        return window.worst_s
    return achieved


def committed_freshness(row: TableStatus) -> float | None:
    """The freshness a stopped table ``row`` is judged by (:func:`_committed`)."""
    return _committed(row.window, row.achieved_s)


def _judge(fresh: float | None, achieved: float | None, target: FreshnessTarget,
           activity: str, pending: bool | None) -> str:
    """ok | warn | fail | -: a stopped table is judged by ``achieved``, the freshness its
    commits had (:func:`_committed`); a running one that has nothing pending is fresh;
    else by its age now."""
    if target.target_s is None and target.warn_s is None:
        return "-"
    if activity in ("stopped", "suspended"):
        seen = achieved
    elif pending is False:
        return "ok"
    else:
        seen = fresh
    return "-" if seen is None else freshness_status(seen, target.target_s, target.warn_s)


def _facts(table: AnyTable) -> tuple[str, int | None, int | None, TableStorage]:
    """Format, last commit (ms), live rows and storage of an Iceberg or Hudi table."""
    if isinstance(table, HudiTimeline):
        writes = table.writes()
        return (f"hudi {table.table_type.lower()}",
                table.committed_ms(writes[-1]) if writes else None, None, hudi_storage(table))
    current = table.current_snapshot()
    return ("iceberg", current.timestamp_ms if current is not None else None,
            live_rows(current), table_storage(table))


def table_status(name: str, table: AnyTable, *, declared: FreshnessTarget | None = None,
                 lag: LagProbe | None = None, now_ms: int | None = None,
                 running: RunningProbe | None = None, walk: _Walk | None = None,
                 window: tuple[int, int] | None = None) -> TableStatus:
    """The status of one loaded table (``walk``: its markers, when read already;
    ``window``: the commit times a stopped table is judged over, default its last minute)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    kind, last_commit_ms, rows_total, storage = _facts(table)
    walk = walk if walk is not None else read_markers(table)
    latest = walk.latest
    life = TableState.of(table.properties)
    target = _target(latest, declared, life.freshness_s)
    fresh = None if walk.newest_event_ms is None else max(0.0, (now - walk.newest_event_ms) / 1000)
    lags = _lag(walk, lag)
    activity = "suspended" if life.suspended else _activity(tuple(sorted(walk.per_flow)),
                                                            running)
    pending = _pending(lags)
    judged = freshness_window(walk.events, window)
    state = _judge(fresh, _committed(judged, _achieved(walk)), target, activity, pending)
    extra = latest.extra if latest is not None else {}
    return TableStatus(
        table=name, format=kind, flows=tuple(sorted(walk.per_flow)),
        last_commit_ms=last_commit_ms,
        rows_last_commit=latest.rows if latest is not None else None,
        rows_total=rows_total, newest_event_ms=walk.newest_event_ms,
        freshness_s=fresh, achieved_s=_achieved(walk),
        target_s=target.target_s, warn_s=target.warn_s, state=state,
        mode=extra.get(MarkerExtra.FRESHNESS_MODE),
        batch_s=None if latest is None or latest.batch_ms is None else latest.batch_ms / 1000,
        dead_letters=latest.dlq_rows if latest is not None else None,
        dropped=_opt_int(extra.get(MarkerExtra.EXPECT_DROPPED)),
        expectations=expectation_counts(extra), lag=lags,
        errors=flow_errors(table.properties, last_commit_ms),
        activity=activity, pending=pending, storage=storage,
        master=extra.get(MarkerExtra.MASTER),
        executors=tuple(e for e in extra.get(MarkerExtra.EXECUTORS, MarkerExtra.EXECUTORS_DEFAULT)
                        .split(",") if e),
        window=judged,
    )


def _load_tables(catalog: ReadCatalog, tables: Sequence[str] | None,
                 hudi: Mapping[str, HudiTimeline] | None = None) -> dict[str, AnyTable | None]:
    """``tables`` (``db.table``; default: every table of the catalog, Hudi ones too)
    loaded, in order (None: it does not exist); ``hudi``: the catalog's Hudi tables."""
    hudi = hudi or {}
    names = (list(tables) if tables is not None
             else sorted({*(".".join(i) for i in all_tables(catalog)), *hudi}))
    loaded: dict[str, AnyTable | None] = {}
    for name in names:
        if name.lower() in hudi:
            loaded[name] = hudi[name.lower()]
            continue
        try:
            loaded[name] = catalog.load_table(tuple(name.split(".")))
        except (NoSuchTableError, NoSuchNamespaceError):
            loaded[name] = None
    return loaded


def _prefetch(probe: LagProbe | None, walks: Iterable[_Walk]) -> None:
    """Ask every source the walks' markers name at once, for a bounded time."""
    if isinstance(probe, LagProbes):
        probe.prefetch((key, position) for walk in walks for marker in walk.per_flow.values()
                       for key, position in sorted(marker.end.items()))


def collect_status(catalog: ReadCatalog, tables: Sequence[str] | None = None, *,
                   targets: Mapping[str, FreshnessTarget] | None = None,
                   lag: LagProbe | None = None, now_ms: int | None = None,
                   running: Callable[[str, str], bool | None] | None = None,
                   hudi: Mapping[str, HudiTimeline] | None = None,
                   window: tuple[int, int] | None = None) -> list[TableStatus]:
    """Status of ``tables`` (``db.table``; default: every table of the catalog);
    ``hudi``: the catalog's Hudi tables by ``db.table``; ``window``: the commit times
    (epoch ms) stopped tables are judged over (default: each table's last minute of
    commits, :mod:`icetide.app.window`)."""
    loaded = _load_tables(catalog, tables, hudi)
    walks = {name: read_markers(table) for name, table in loaded.items() if table is not None}
    _prefetch(lag, walks.values())
    held = dead_letter_tables(catalog, loaded)
    out: list[TableStatus] = []
    for name, table in loaded.items():
        if table is None:
            out.append(TableStatus(table=name, exists=False))
            continue
        probe = None if running is None else (lambda flow, n=name: running(n, flow))
        row = table_status(name, table, declared=(targets or {}).get(name), lag=lag,
                           now_ms=now_ms, running=probe, walk=walks[name], window=window)
        out.append(replace(row, dead_letters_total=_held(row, held)))
    return out


def dead_letter_tables(catalog: ReadCatalog,
                       loaded: Mapping[str, AnyTable | None] | None = None
                       ) -> dict[str, tuple[str, int | None]]:
    """Flow name → its dead-letter table (``db.table``, found by the tables' comment) and
    the rows it holds; ``loaded``: tables loaded already (not loaded again)."""
    found: dict[str, tuple[str, int | None]] = {}
    for ident in all_tables(catalog):
        name = ".".join(ident)
        given = (loaded or {}).get(name)
        try:
            table = given if isinstance(given, Table) else catalog.load_table(ident)
        except (NoSuchTableError, NoSuchNamespaceError):
            continue
        if table.properties.get("comment") != DLQ_COMMENT:
            continue
        for flow in read_markers(table).per_flow:
            found.setdefault(flow, (name, live_rows(table.current_snapshot())))
    return found


def _held(row: TableStatus, held: Mapping[str, tuple[str, int | None]]) -> int | None:
    """The rows the dead-letter tables of ``row``'s flows hold (None: they have none; a
    dead-letter table's own row has none either)."""
    tables = {held[f] for f in row.flows if f in held and held[f][0] != row.table}
    return sum(rows or 0 for _, rows in tables) if tables else None


def collect_lags(catalog: ReadCatalog, tables: Sequence[str] | None, probe: LagProbe,
                 hudi: Mapping[str, HudiTimeline] | None = None
                 ) -> dict[str, tuple[SourceLag, ...]]:
    """Source lag per table (``db.table``; default: every table), alone: the part of a
    status that asks the sources, which a page fetches apart, so it waits for each
    source's own answer (a broker that is down: when its client gives up, with its error)."""
    return {name: _lag(read_markers(table), probe)
            for name, table in _load_tables(catalog, tables, hudi).items() if table is not None}


def with_lag(row: TableStatus, lags: Sequence[SourceLag]) -> TableStatus:
    """``row`` (read without lag) with the source lag ``lags``, judged again as
    :func:`table_status` would have judged it with them."""
    if not row.exists:
        return row
    pending = _pending(lags)
    target = FreshnessTarget(row.target_s, row.warn_s)
    return replace(row, lag=tuple(lags), pending=pending,
                   state=_judge(row.freshness_s, _committed(row.window, row.achieved_s),
                                target, row.activity, pending))


def pipeline_scope(graph: PipelineGraph) -> tuple[list[str], dict[str, FreshnessTarget]]:
    """A pipeline's stored tables (``db.table``) and their freshness targets."""
    stored = sorted(name for name, t in graph.tables.items() if not t.is_view)
    defaults = graph.spec.defaults
    return stored, {name: FreshnessTarget.of(graph.tables[name], defaults) for name in stored}
