"""How far a flow's committed source position is behind its source (for ``icetide status``).

A probe answers for one source key (``kafka:<topic>``, ``iceberg:<catalog.db.table>``...)
and one committed position. Built in: Kafka (messages behind the high watermark, per
partition, via :meth:`KafkaSource.lag`) and lake tables (snapshots and appended rows not
yet read, from metadata only). Sources of a loaded pipeline answer through their own
``AnySource.lag``; other kinds (a MySQL binlog reporting seconds behind) plug in with
:meth:`LagProbes.register` under their key scheme. A probe that cannot reach its source
reports the error instead of failing the whole status, and no probe holds the status
up: :meth:`LagProbes.prefetch` asks every source at once, each in a thread of its own,
and waits :data:`LAG_PATIENCE_S` at most; a source that has not answered by then shows
its lag as unknown, with that reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import SupportsFloat, cast

from icetide.config import Settings
from icetide.errors import IcetideError
from icetide.model.markers import dumps
from icetide.model.positions import KafkaPosition
from icetide.model.source import AnySource, Position
from icetide.model.source_key import SourceKey
from icetide.pipelines.graph import PipelineGraph
from icetide.runtime.catalogs import ReadCatalog
from icetide.sources.iceberg import snapshot_step
from icetide.tables.changelog import CHANGELOG_SUFFIX

log = logging.getLogger(__name__)

#: Seconds a status waits for its sources' lag (all asked at once) before showing the
#: lag of those that have not answered as unknown.
LAG_PATIENCE_S = 2.0


@dataclass(frozen=True)
class SourceLag:
    """One source's lag: ``behind`` in ``unit`` (messages, snapshots, seconds)."""

    source: str
    behind: float | None
    unit: str
    detail: Mapping[str, object] = field(default_factory=dict)
    error: str | None = None

    def short(self) -> str:
        """``kafka:clicks: 120 messages``, or ``kafka:clicks: unknown (<why>)``."""
        if self.error is not None:
            return f"{self.source}: unknown ({self.error})"
        behind = "?" if self.behind is None else f"{self.behind:g}"
        return f"{self.source}: {behind} {self.unit}"


#: ``(source key, committed position) -> SourceLag`` (``None``: unknown kind of source)
LagProbe = Callable[[str, Position], "SourceLag | None"]


def _figure(value: object) -> float:
    return float(cast("SupportsFloat | str", value))


def from_source_lag(key: str, info: Mapping[str, object]) -> SourceLag:
    """Interpret a ``AnySource.lag`` answer: ``total`` messages, or ``seconds_behind``."""
    if "total" in info:
        return SourceLag(key, _figure(info["total"]), "messages", dict(info))
    if "seconds_behind" in info:
        return SourceLag(key, _figure(info["seconds_behind"]), "seconds", dict(info))
    if "rows" in info:
        return SourceLag(key, _figure(info["rows"]), "rows", dict(info))
    return SourceLag(key, None, "unknown", dict(info))


class LagProbes:
    """Answers lag by source key; pipeline sources first, then the probe of the key scheme."""

    def __init__(self, settings: Settings, catalog: ReadCatalog,
                 sources: Mapping[str, AnySource] | None = None) -> None:
        self.settings = settings
        self.catalog = catalog
        self.sources: dict[str, AnySource] = dict(sources or {})
        self._seen: dict[tuple[str, str], SourceLag | None] = {}
        self._failed: dict[str, SourceLag] = {}
        #: keys whose probe still runs in a thread (past its patience): closed when it ends
        self._running: list[str] = []
        self._closed = False
        self._lock = threading.Lock()
        self.probes: dict[str, Callable[[str, Position], SourceLag]] = {
            "kafka": self._kafka, "iceberg": self._iceberg, "hudi": self._hudi}

    def register(self, scheme: str, probe: Callable[[str, Position], SourceLag]) -> None:
        """Answer keys ``<scheme>:...`` with ``probe`` (e.g. ``mysql`` → seconds behind)."""
        self.probes[scheme] = probe

    def __call__(self, key: str, position: Position) -> SourceLag | None:
        """The lag of ``position`` on source ``key``; ``None`` when no probe knows the key.

        Answers are cached per (key, position), and a source that could not be reached is
        not asked again (side tables carry the same markers as their targets).
        """
        if key in self._failed:
            return self._failed[key]
        cache_key = (key, dumps(position))
        if cache_key not in self._seen:
            self._seen[cache_key] = self._probe(key, position)
            found = self._seen[cache_key]
            if found is not None and found.error is not None:
                self._failed[key] = found
        return self._seen[cache_key]

    def prefetch(self, wanted: Iterable[tuple[str, Position]],
                 patience: float = LAG_PATIENCE_S) -> None:
        """Ask every source of ``wanted`` at once, each in a (daemon) thread, for at most
        ``patience`` seconds in all; later calls answer from what came back. A source that
        did not answer in time is reported as unknown (and not asked again), its thread
        left to finish on its own. Lake tables (``iceberg:``) are asked later, in the
        caller's thread: they share its catalog client."""
        jobs: dict[tuple[str, str], tuple[threading.Thread, list[SourceLag | None]]] = {}
        for key, position in wanted:
            cache_key = (key, dumps(position))
            if (SourceKey.kind_of(key) == SourceKey.ICEBERG or key in self._failed
                    or cache_key in self._seen or cache_key in jobs):
                continue
            jobs[cache_key] = self._start(key, position)
        deadline = time.monotonic() + patience
        for (key, encoded), (thread, answer) in jobs.items():
            thread.join(max(0.0, deadline - time.monotonic()))
            found = answer[0] if answer else self._silent(key, patience)
            self._seen[(key, encoded)] = found
            if found is not None and found.error is not None:
                self._failed[key] = found

    def _silent(self, key: str, patience: float) -> SourceLag:
        """The lag of a source that did not answer within ``patience``: unknown, and why."""
        where = getattr(self.sources.get(key), "bootstrap", None)
        return SourceLag(key, None, "", error=f"no answer in {patience:g}s"
                         + (f" from {where}" if where else ""))

    def _start(self, key: str, position: Position
               ) -> tuple[threading.Thread, list[SourceLag | None]]:
        answer: list[SourceLag | None] = []

        def probe() -> None:
            try:
                answer.append(self._probe(key, position))
            finally:
                with self._lock:
                    self._running.remove(key)
                    late = self._closed and key not in self._running
                if late:  # the status ended without it: close what it opened
                    self._close_key(key)

        with self._lock:
            self._running.append(key)
        thread = threading.Thread(target=probe, name=f"lag {key}", daemon=True)
        thread.start()
        return thread, answer

    def _probe(self, key: str, position: Position) -> SourceLag | None:
        try:
            if key in self.sources:
                return from_source_lag(key, self.sources[key].lag(position))
            followed = self._followed(key)
            if followed is not None:
                return from_source_lag(key, followed.lag(position))
            probe = self.probes.get(SourceKey.kind_of(key) or "")
            return probe(key, position) if probe is not None else None
        except (IcetideError, OSError, KeyError, TypeError, ValueError) as exc:
            log.warning("lag of %s unavailable: %s", key, exc)
            return SourceLag(key, None, "", error=str(exc).splitlines()[0][:200])

    def _kafka(self, key: str, position: Position) -> SourceLag:
        from icetide.sources.kafka.source import KafkaSource

        src = KafkaSource(SourceKey.parse(key).name, self.settings.kafka,
                          retry_patience=LAG_PATIENCE_S, request_timeout=LAG_PATIENCE_S)
        self.sources[key] = src
        return from_source_lag(key, src.lag(cast(KafkaPosition, position)))

    def _followed(self, key: str) -> AnySource | None:
        """The reader a CDC flow builds from a declared database source: markers name it
        ``mysql:<source>:<table or pattern>``, the pipeline declares ``mysql:<source>``."""
        parsed = SourceKey.read(key)
        if parsed is None or not parsed.followed:
            return None
        follow = getattr(self.sources.get(str(parsed.declared)), "follow", None)
        if follow is None:
            return None
        # lag is the binlog's: any table will do
        reader: AnySource = follow(parsed.followed, (), ())
        self.sources[key] = reader
        return reader

    def _hudi(self, key: str, position: Position) -> SourceLag:
        """Commits (and the rows they changed, by their write statistics) completed
        after the flow's position on a Hudi table, from its timeline (no JVM)."""
        from icetide.lake.hudi_timeline import HudiTimeline, pending_changes
        from icetide.query.hudi_info import hudi_tables

        name = SourceKey.parse(key).table(self.catalog.name).lower()
        location = hudi_tables(self.settings).get(name)
        if location is None:
            return SourceLag(key, None, "", error=f"no Hudi table {name} in the catalog")
        after = position.get("instant") if isinstance(position, Mapping) else None
        commits, rows = pending_changes(HudiTimeline(location, self.settings),
                                        None if after is None else str(after))
        return SourceLag(key, float(rows), "rows", {"commits": commits, "rows": rows})

    def _iceberg(self, key: str, position: Position) -> SourceLag:
        table = self.catalog.load_table(
            tuple(SourceKey.parse(key).table(self.catalog.name).split(".")))
        start = position.get("snapshot") if isinstance(position, Mapping) else None
        snaps, rows, removes = 0, 0, False
        log = key.endswith(CHANGELOG_SUFFIX)
        snap = table.current_snapshot()
        while snap is not None and snap.snapshot_id != start:
            summary = snap.summary
            if summary is not None:
                step = snapshot_step(snap.snapshot_id, summary.operation.value,
                                     summary.additional_properties, log=log)
                rows, removes = rows + step.rows, removes or step.removes
            snaps += 1
            parent = snap.parent_snapshot_id
            snap = table.snapshot_by_id(parent) if parent is not None else None
        # pending rows, not snapshots: commits that changed nothing (marker-only batches,
        # compactions) leave nothing to read; rows deleted or rewritten count as changes
        return SourceLag(key, float(rows), "rows",
                         {"snapshots": snaps, "rows": rows, "removes": removes})

    def close(self) -> None:
        """Close the sources' clients (the given sources' too); a probe still running
        closes its own when it ends."""
        with self._lock:
            self._closed = True
            idle = [key for key in self.sources  # a followed reader needs its base
                    if not any(r == key or r.startswith(key + ":") for r in self._running)]
        for key in idle:
            self._close_key(key)

    def _close_key(self, key: str) -> None:
        src = self.sources.get(key)
        if src is not None:
            src.close()


def pipeline_sources(graph: PipelineGraph, settings: Settings) -> dict[str, AnySource]:
    """A pipeline's declared sources by key (they know their own bootstrap, credentials)."""
    from icetide.sources.registry import build_sources

    return {src.key: src for src in build_sources(graph, settings).values()}
