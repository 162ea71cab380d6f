"""The one generic exactly-once flow loop.

A flow is a function from a source position to a commit:

1. read the flow's newest marker from the target's snapshot ancestors → ``start``;
2. plan the next batch per source from ``start`` (or re-plan a half-committed one);
3. transform it with Spark (clean, validate → dead letters, join dimensions...);
4. commit side tables, then the target, each with the marker ``(start, end)``;
5. repeat (continuous) or stop (``once``).

A crash anywhere leaves the old position in the target, so the batch is planned again;
side tables that already hold it are skipped (see :mod:`icetide.model.markers`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from threading import Event
from typing import TYPE_CHECKING

from tenacity import Retrying, wait_none

from icetide.errors import IcetideError, SourceUnavailableError, listed
from icetide.flows import stats
from icetide.flows.context import BatchContext, bound
from icetide.flows.failures import FlowFailed, describe_error
from icetide.flows.lifecycle import Lifecycle
from icetide.flows.marking import Marking, Span
from icetide.flows.sizing import BatchSizer
from icetide.flows.stats import Observed, Stats
from icetide.flows.timing import JobCounter, Phases
from icetide.lake import commit
from icetide.lake.changes import ChangeNotReadable
from icetide.lake.sinks import AppendSink, Changes, DeferredProps, Sink
from icetide.model.markers import Marker, same_position
from icetide.model.positions import Position
from icetide.model.source import AnyBatch, AnySource
from icetide.runtime.interrupt import Interrupted
from icetide.runtime.retry import Failure, retrying, stop_after_counted

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

Transform = Callable[[BatchContext], "DataFrame"]
#: ``--once``: commit conflicts in a row (a compaction committed first) retried before
#: failing; a continuous run retries them without counting them as failures.
CONFLICT_RETRIES = 10


class ConcurrentWriterError(IcetideError):
    """Another writer committed this flow's range first: nothing was committed by us."""

    def __init__(self, flow: str, target: str) -> None:
        super().__init__(
            f"flow {flow!r}: another writer committed to {target} since this batch was "
            "planned; its range is not committed twice"
        )


@dataclass(frozen=True)
class CheckedBatch:
    """A batch after its data-quality checks (see :mod:`icetide.engine.quality`)."""

    out: DataFrame
    rows: int
    max_event_time_ms: int | None
    extra: Mapping[str, str]


#: Checks the persisted batch in one pass: ``(out, event_time_column) -> CheckedBatch``;
#: raising fails the batch (nothing is committed).
Checker = Callable[["DataFrame", "str | None"], CheckedBatch]


@dataclass(frozen=True)
class Flow:
    """Everything the loop needs to run one flow."""

    name: str
    target: str  # catalog-qualified identifier
    sources: Mapping[str, AnySource]
    transform: Transform
    sink: Sink = field(default_factory=AppendSink)
    side_tables: tuple[str, ...] = ()
    event_time_column: str | None = None
    max_records: int | None = None
    catalog: str = "lake"
    config: Mapping[str, object] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    checker: Checker | None = None
    #: Least seconds between two batch starts in a continuous run, whatever the trigger
    #: interval (a materialized view's ``icetide.refresh-interval``); ``--once`` ignores it.
    min_spacing: float = 0.0

    def writes(self) -> tuple[str, ...]:
        """The lake tables the flow commits to: its target, then the transform's side
        tables (dead letters) and the sink's (a changelog)."""
        return (self.target, *self.side_tables, *self.sink.side_tables())


@dataclass(frozen=True)
class BatchResult:
    """What one committed batch did."""

    flow: str
    start: Mapping[str, Position]
    end: Mapping[str, Position]
    rows: int
    rows_in: int
    dlq_rows: int
    max_event_time_ms: int | None
    seconds: float
    caught_up: bool
    #: Per primary-key table MERGEd: rows inserted, updated and deleted.
    changes: Mapping[str, Changes] = field(default_factory=dict)
    #: Seconds per phase of the batch (see :mod:`icetide.flows.timing`).
    phases: Mapping[str, float] = field(default_factory=dict)
    #: Spark jobs the batch started.
    jobs: int = 0


class FlowLoop:
    """Runs one flow: ``run_batch`` once, ``run_until_caught_up``, or ``run_forever``."""

    def __init__(self, spark: SparkSession, flow: Flow, max_failures: int = 5) -> None:
        self.spark = spark
        self.flow = flow
        #: Failed batches in a row (not counting an unreachable source) before giving up.
        self.max_failures = max_failures
        self.failures = 0
        #: Extra marker keys the driver sets (e.g. the chosen refresh mode).
        self.summary_extra: dict[str, str] = {}
        #: End of the batch this loop committed last (``None`` before the first commit and
        #: once a batch starts writing): the next batch starts there without reading the
        #: markers, and no side table can hold a half-committed batch.
        self._committed_end: dict[str, Position] | None = None
        self._side_exists: set[str] = set()  # side tables seen to exist (never dropped)
        #: The marker end the current batch was planned from (None: no marker yet).
        self._planned_from: Mapping[str, Position] | None = None
        #: The target's lifecycle state (suspended, freshness set at run time).
        self.lifecycle = Lifecycle(spark, flow.name, flow.target)
        #: Seconds a batch may last (set by the scheduler; ``None``: ``max_records`` only).
        self.batch_seconds: float | None = None
        self.sizer = BatchSizer(flow.max_records)
        self._cap = flow.max_records  # the records cap the current batch was planned with

    # -- positions -------------------------------------------------------------------
    def committed_start(self) -> dict[str, Position]:
        """Where the next batch starts: the target's marker, else each source's beginning."""
        marker = commit.last_marker(self.spark, self.flow.target, self.flow.name)
        done = dict(marker.end) if marker else {}
        self._planned_from = marker.end if marker else None
        if marker is not None:
            self.sizer.seed(marker.rows_in, marker.batch_ms)
        return {
            key: done[key] if key in done else src.initial_position()
            for key, src in self.flow.sources.items()
        }

    def _resume(self) -> tuple[dict[str, Position], dict[str, Position] | None, set[str]]:
        """Where the next batch starts, a half-committed batch to finish (its end) and the
        side tables already holding it.

        After this loop's own commit (and after batches that found nothing since) the
        position is the end it committed: no marker is read — a flow's lease keeps other
        runs of it away, and :meth:`check_still_newest` still reads the marker once before
        any commit. Otherwise (first batch, after a failure) the markers say.
        """
        known = self._committed_end
        if known is not None:
            self._planned_from = known
            return dict(known), None, set()
        start = self.committed_start()
        pending_end, sides_done = self.pending_side_batch(start)
        return start, pending_end, sides_done

    def all_side_tables(self) -> tuple[str, ...]:
        """Side tables of the transform (dead letters) and of the sink (changelog)."""
        return self.flow.writes()[1:]

    def pending_side_batch(
        self, start: Mapping[str, Position]
    ) -> tuple[dict[str, Position] | None, set[str]]:
        """A batch some side table committed but the target did not: its end and those tables."""
        pending_end: dict[str, Position] | None = None
        done: set[str] = set()
        for side in self.all_side_tables():
            if side not in self._side_exists:
                if not self.spark.catalog.tableExists(side):
                    continue
                self._side_exists.add(side)
            marker = commit.last_marker(self.spark, side, self.flow.name)
            if (marker and same_position(marker.start, start)
                    and not same_position(marker.end, start)):
                pending_end = dict(marker.end)
                done.add(side)
        return pending_end, done

    def check_still_newest(self) -> None:
        """Raise :class:`ConcurrentWriterError` when another writer of this flow committed
        since the batch was planned (its range would be committed twice)."""
        marker = commit.last_marker(self.spark, self.flow.target, self.flow.name)
        now = marker.end if marker else None
        before = self._planned_from
        if (now is None) != (before is None) or (
                now is not None and before is not None and not same_position(now, before)):
            raise ConcurrentWriterError(self.flow.name, self.flow.target)

    def plan(
        self, start: Mapping[str, Position], pending_end: Mapping[str, Position] | None
    ) -> dict[str, AnyBatch] | None:
        """One range per source, or ``None`` when no source has anything new."""
        batches: dict[str, AnyBatch] = {}
        self._cap = self.sizer.cap(self.batch_seconds)
        for key, src in self.flow.sources.items():
            if pending_end is not None:
                batches[key] = src.plan_to(start[key], pending_end.get(key, start[key]))
                continue
            try:
                planned = src.plan(start[key], self._cap)
            except ChangeNotReadable as exc:
                raise exc.stopping(self.flow.target) from None
            batches[key] = planned or src.plan_to(start[key], start[key])
        if pending_end is None and all(b.records == 0 for b in batches.values()):
            return None
        return batches

    # -- one batch -------------------------------------------------------------------
    def run_batch(self) -> BatchResult | None:
        """Plan, transform and commit one batch; ``None`` when there was nothing to do."""
        if self.lifecycle.state().suspended:
            return None
        began, phases = time.monotonic(), Phases()
        with phases("position"):
            start, pending_end, sides_done = self._resume()
        if pending_end is not None:
            log.info("flow %s: finishing half-committed batch %s → %s",
                     self.flow.name, start, pending_end)
        with phases("plan"):
            batches = self.plan(start, pending_end)
        if batches is None:
            return None
        end = {key: b.end for key, b in batches.items()}
        ctx = BatchContext(self.spark, self.flow.name, self.flow.catalog, self.flow.sources,
                           batches, self.flow.config, self.flow.aliases)
        jobs = JobCounter(self.spark, self.flow.name)
        self._committed_end = None  # writing: until the commit, the tables say where we are
        try:
            with bound(ctx), phases("transform"):
                out = self.flow.transform(ctx)
            result = self._commit(ctx, out, Span(start, end, began), sides_done, phases)
            self._committed_end = end
            self.sizer.observe(result.rows_in, result.seconds, filled=not result.caught_up)
            if pending_end is not None:  # a past end, re-planned: more may have arrived since
                result = replace(result, caught_up=False)
            return replace(result, phases=dict(phases.seconds), jobs=jobs.count())
        finally:
            jobs.close()
            ctx.release()

    def _commit(self, ctx: BatchContext, out: DataFrame, span: Span, sides_done: set[str],
                phases: Phases) -> BatchResult:
        from pyspark import StorageLevel

        start, end = span.start, span.end
        rows_in = sum(b.records for b in ctx.batches.values())
        if self._reuse_inputs(ctx):
            log.debug("flow %s: inputs cached, recomputing the output", self.flow.name)
        else:
            out = out.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            with phases("check"):
                counted, kept, extra = self._check(ctx, out)
            with phases("position"):
                self.check_still_newest()
            with phases("dead_letters"):
                known = counted.observed if counted is not None else {}
                dlq_rows = self._write_sides(ctx, span, sides_done, rows_in, known)
            if ctx.side_outputs:
                with phases("position"):
                    self.check_still_newest()
            measure, kept = self._measured(counted, kept)
            marked = Marking(self.flow.name, ctx, span, rows_in, dlq_rows,
                             {**self.summary_extra, **extra}, measure,
                             self.flow.event_time_column)
            with phases("write"):
                changes = self.flow.sink.write(self.spark, kept, self.flow.target,
                                               DeferredProps(marked.props),
                                               frozenset(sides_done))
        finally:
            out.unpersist()
        seconds = time.monotonic() - span.began
        marker = marked.marker
        assert marker is not None  # the sink built the props before committing
        log.info("flow %s: committed %d rows (%d in, %d dead letters%s) in %.2fs",
                 self.flow.name, marker.rows, rows_in, dlq_rows,
                 "".join(f"; {t}: {c}" for t, c in changes.items()), seconds)
        return BatchResult(self.flow.name, start, end, marker.rows, rows_in, dlq_rows,
                           marker.max_event_time_ms, seconds, self._caught_up(ctx), changes)

    def _caught_up(self, ctx: BatchContext) -> bool:
        """Whether the batch took all there was: no source hit the records cap (a source
        may say itself whether it has more: ``info["caught_up"]``, e.g. CDC)."""
        cap = self._cap
        return all(b.info.get("caught_up", cap is None or b.records < cap)
                   for b in ctx.batches.values())

    def _reuse_inputs(self, ctx: BatchContext) -> bool:
        """Whether the output need not be cached too: the counting pass and the write each
        recompute it from the batch's cached source rows (one cache layer, not two; the
        sources are never read twice). Expectations keep the output cached, so what was
        checked is exactly what is written; so do dimension look-ups: recomputed, each
        broadcast look-up would be collected and broadcast again for the write: a Spark
        job per dimension and batch (docs/benchmarks.md)."""
        return (self.flow.checker is None and bool(ctx.accessed) and not ctx.looked_up
                and all(ctx.is_cached(key) for key in ctx.accessed))

    def _check(self, ctx: BatchContext, out: DataFrame
               ) -> tuple[Stats | None, DataFrame, Mapping[str, str]]:
        """The batch's figures, the rows to commit and extra marker keys. Without
        expectations, a sink that reads the batch before committing (a MERGE) gathers the
        figures on that read (``None`` here): no job of their own. The counting job also
        gathers the side tables' observed row counts (:meth:`BatchContext.emit`)."""
        if self.flow.checker is None:
            if self.flow.sink.reads_first:
                return None, out, {}
            observe = [n for names in ctx.side_metrics.values() for n in names]
            return stats.count(out, self.flow.event_time_column, observe), out, {}
        checked = self.flow.checker(out, self.flow.event_time_column)
        return Stats(checked.rows, checked.max_event_time_ms), checked.out, checked.extra

    def _measured(self, counted: Stats | None,
                  kept: DataFrame) -> tuple[Stats | Observed, DataFrame]:
        """The figures counted, or ``kept`` observed so the sink's first read gathers them
        (created just before the write: an observation nothing reads stays registered)."""
        if counted is not None:
            return counted, kept
        observed = Observed(kept, self.flow.event_time_column)
        return observed, observed.df

    def _write_sides(self, ctx: BatchContext, span: Span, sides_done: set[str],
                     rows_in: int, observed: Mapping[str, int]) -> int:
        """Commit each side table's rows with the batch's marker; the rows committed.
        A side table whose rows the counting job observed needs no count of its own
        (and no job at all when there are none)."""
        total = 0
        for ident, df in ctx.side_outputs.items():
            if ident not in self.flow.side_tables:
                raise IcetideError(
                    f"flow {self.flow.name!r} emitted rows to {ident!r}, which is not one of its "
                    f"side tables {listed(self.flow.side_tables)}; declare it "
                    "(e.g. dead_letter=...)"
                )
            known = ctx.side_rows(ident, observed)
            if known is not None:
                total += known
                if known and ident not in sides_done:
                    self._append_side(df, ident, span, known, rows_in)
                continue
            df = df.persist()
            try:
                n = df.count()
                total += n
                if n and ident not in sides_done:
                    self._append_side(df, ident, span, n, rows_in)
            finally:
                df.unpersist()
        return total

    def _append_side(self, df: DataFrame, ident: str, span: Span, rows: int,
                     rows_in: int) -> None:
        marker = Marker(self.flow.name, span.start, span.end, rows=rows, rows_in=rows_in,
                        committed_at_ms=int(time.time() * 1000))
        commit.append(df, ident, marker.to_summary())

    # -- driving ---------------------------------------------------------------------
    def run_until_caught_up(self, max_batches: int | None = None) -> list[BatchResult]:
        """``--once``: process what is available now, commit, return."""
        results: list[BatchResult] = []
        while max_batches is None or len(results) < max_batches:
            result = self._replanning()(self.run_batch)
            if result is None:
                break
            results.append(result)
            if result.caught_up:
                break
        return results

    def _replanning(self) -> Retrying:
        """A batch that lost to a racing writer or a compaction (nothing of it committed)
        is planned again at once; commit conflicts ``CONFLICT_RETRIES`` times at most."""

        def replan(failure: Failure, wait: float) -> None:
            if isinstance(failure.error, ConcurrentWriterError):
                log.warning("%s; planning again from its commit", failure.error)
            else:
                log.warning("flow %s: commit conflict, nothing committed; planning again",
                            self.flow.name)

        def conflict(exc: BaseException) -> bool:
            return (isinstance(exc, Exception) and not isinstance(exc, ConcurrentWriterError)
                    and commit.is_commit_conflict(exc))

        return retrying(lambda e: isinstance(e, ConcurrentWriterError) or conflict(e),
                        wait=wait_none(), stop=stop_after_counted(CONFLICT_RETRIES, conflict),
                        on_retry=replan)

    def attempt(self, trigger_interval: float) -> Attempt:
        """One try at the next batch, as a scheduler drives it: what was committed, or how
        long to wait before trying again.

        An unreachable source or a racing writer is retried for as long as it takes; any
        other failure is retried with backoff ``max_failures`` times in a row, then
        :class:`FlowFailed` is raised: a bug in the flow's code or a query Spark cannot
        analyse does not loop for ever. :class:`IcetideError` (refusals) and
        :class:`Interrupted` propagate at once.
        """
        try:
            result = self.run_batch()
        except (ConcurrentWriterError, SourceUnavailableError) as exc:
            log.warning("flow %s: %s; retrying", self.flow.name, exc)
            return Attempt(None, min(5.0, max(1.0, trigger_interval)))
        except IcetideError:
            raise
        except Exception as exc:
            return Attempt(None, self._failed(exc))
        self.failures = 0
        return Attempt(result, None)

    def _failed(self, exc: Exception) -> float:
        """Seconds to wait after a failed batch. A commit conflict (a compaction committed
        first; nothing of ours was committed) is no failure; ``max_failures`` others in a
        row raise :class:`FlowFailed`."""
        if commit.is_commit_conflict(exc):
            log.warning("flow %s: commit conflict, nothing committed; planning again (%s)",
                        self.flow.name, describe_error(exc))
            return 1.0
        self.failures += 1
        if self.failures >= self.max_failures:
            raise FlowFailed(self.flow.name, self.failures, exc) from exc
        delay = min(2.0 ** self.failures, 60.0)
        log.exception("flow %s: batch failed (attempt %d of %d); retrying in %.0fs",
                      self.flow.name, self.failures, self.max_failures, delay)
        return delay

    def run_forever(self, trigger_interval: float, stop: Event,
                    on_batch: Callable[[BatchResult], None] | None = None,
                    pace: Callable[[BatchResult | None], float] | None = None) -> None:
        """Continuous mode for this flow alone: a batch every ``trigger_interval`` seconds
        (or ``pace(result)``) until ``stop`` is set; a batch that was not caught up is
        followed at once. Pipelines run under :mod:`icetide.engine.scheduler` instead."""
        while not stop.is_set():
            began = time.monotonic()
            try:
                tried = self.attempt(trigger_interval)
            except Interrupted:
                return
            if tried.retry_in is not None:
                stop.wait(tried.retry_in)
                continue
            result = tried.result
            if result is not None and on_batch is not None:
                on_batch(result)
            interval = trigger_interval if pace is None else pace(result)
            if result is not None and not result.caught_up:
                continue  # behind: next batch immediately
            stop.wait(max(0.0, interval - (time.monotonic() - began)))


@dataclass(frozen=True)
class Attempt:
    """The outcome of :meth:`FlowLoop.attempt`."""

    result: BatchResult | None  # the committed batch; None: nothing new (or a failure)
    retry_in: float | None = None  # a failure: seconds to wait before the next try
