"""The pipeline scheduler: a continuous pipeline runs as one DAG, not a timer per flow.

A flow's next batch starts when one of its inputs may have new data: right after the flow
of this run that writes its input table commits, or, for an external input (Kafka, a
binlog, a table written elsewhere), on a poll. The trigger interval is a *minimum
spacing* between one flow's batch starts; the freshness pacer (:mod:`icetide.engine.pacing`)
turns each flow's *budget* — its table's end-to-end target tightened by the targets
downstream and less how stale its inputs already are (:attr:`Slot.budget`) — into that
spacing. Ready flows run on up to ``flows.concurrency`` workers, each batch in the Spark
FAIR pool of its flow (:func:`~icetide.engine.dag.pool_names`), at most one batch per
target table at a time, earliest deadline first; a worker beyond the first takes a flow
only when it would otherwise be late (:mod:`icetide.engine.workers`).

Exactly-once is the flow loop's business (:mod:`icetide.flows.loop`): the scheduler only
decides *when* a batch runs. The first flow error stops the run. The rules in full:
docs/operations.md ("Scheduling", "Freshness").
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from icetide.config.sections import ExtraWorkers
from icetide.engine.dag import link, pool_names
from icetide.engine.overdue import OverdueWatch
from icetide.engine.pacing import FreshnessPacer
from icetide.engine.workers import WHEN_LATE, expected_end, late
from icetide.errors import IcetideError, PipelineError
from icetide.flows.loop import Attempt, BatchResult, FlowLoop
from icetide.runtime.interrupt import Interrupted, pause
from icetide.runtime.startup import phase

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: Priority of a flow without a freshness target: as if its target were this (seconds).
DEFAULT_TARGET_S = 60.0
#: A flow with no freshness target (none on its table, none downstream) starts a batch
#: at most once per this many of its batch durations: it uses at most 1/4 of a worker,
#: however its cost grows (a materialized view recomputing a growing day).
UNTARGETED_COST_FACTOR = 4.0
#: A flow fed only by this run's flows is still polled this often (× its spacing, at
#: least IDLE_POLL_MIN_S), in case another process writes its inputs.
IDLE_POLL_FACTOR = 6.0
IDLE_POLL_MIN_S = 30.0
#: An external input with nothing new is looked at again after at most this long.
POLL_S = 1.0
#: A batch is cut where it would outlast this share of the tightest freshness target it
#: serves: a backlog is taken in steps that each commit in time (flows/sizing.py).
BATCH_SHARE = 0.5
#: The Spark FAIR pool of maintenance passes.
MAINTENANCE_POOL = "maintenance"
#: After a maintenance pass of d seconds the next starts no sooner than this × d later:
#: maintenance takes at most 1/4 of the time, however many tables fall due at once.
MAINTENANCE_GAP_FACTOR = 3.0
#: The scheduler wakes at least this often to notice a stop request.
TICK_S = 0.5
#: A flow waiting for an upstream flow of its diamond (:meth:`Slot.held_until`) waits at
#: most this many of that flow's batch durations after its input changed.
ALIGN_WAIT_FACTOR = 2.0

OnBatch = Callable[[BatchResult], None]
OnError = Callable[[FlowLoop, BaseException], None]


class Maintenance(Protocol):
    """Table maintenance the scheduler fits in
    (:class:`icetide.engine.maintenance_schedule.MaintenanceSchedule`)."""

    def due(self, now: float) -> list[str]:
        """Tables whose maintenance is due at wall-clock ``now``, most overdue first."""

    def run(self, table: str) -> object:
        """One pass on ``table``; never raises."""


@dataclass(eq=False)
class Slot:
    """One flow's scheduling state (times are ``time.monotonic()`` seconds)."""

    loop: FlowLoop
    pacer: FreshnessPacer
    spacing: float
    #: Whether the flow has an input that no flow of this run writes (it must be polled).
    polls: bool
    downstream: list[Slot] = field(default_factory=list)
    upstream: list[Slot] = field(default_factory=list)
    #: The lake tables its commits write (target and side tables), and those it reads.
    writes: frozenset[str] = frozenset()
    reads: frozenset[str] = frozenset()
    #: The spacing bound: the last committed batch's start + ``spacing``.
    next_start: float = 0.0
    #: When the inputs are looked at again without a commit upstream.
    next_poll: float = 0.0
    dirty: bool = True  # an upstream flow committed since this flow's last batch started
    dirty_since: float = field(default_factory=time.monotonic)  # when it became dirty
    #: Upstream flows fed by another of this flow's upstream flows (a diamond): after a
    #: commit above both, this flow waits for them (:meth:`held_until`).
    aligned: list[Slot] = field(default_factory=list)
    #: When the oldest input not yet taken by a batch arrived (``inf``: none known): for
    #: a polled source, its last batch start; for a consumer, the arrival its producer's
    #: committed batch carried; after a capped batch, that batch's start at the latest
    #: (:meth:`left_behind`). Priority counts from it (see :meth:`deadline`).
    pending_since: float = 0.0
    #: ``pending_since`` as the running batch took it; its commit hands it downstream.
    batch_since: float = 0.0
    running: bool = False
    behind: bool = False  # the last batch was capped: more is waiting
    #: The upstream flows that committed since its last batch started (:meth:`held_until`).
    fed_by: set[str] = field(default_factory=set)
    #: When its last batch started (``-inf``: none yet): what a capped batch leaves counts
    #: from it (:meth:`left_behind`), and among equal deadlines the flow that waited
    #: longest goes first (:meth:`order`).
    started: float = -math.inf

    @property
    def name(self) -> str:
        return self.loop.flow.name

    @property
    def target(self) -> str:
        return self.loop.flow.target

    @property
    def target_s(self) -> float:
        """For priority: the tightest freshness target this flow serves, its table's or
        one downstream (every hop on the way to a 10 s table is as urgent as that table)."""
        return self.serves() or DEFAULT_TARGET_S

    def serves(self) -> float | None:
        """The tightest target of this flow's table and the tables downstream of it."""
        found = [t for t in (self.pacer.target.target_s, *(c.serves() for c in self.downstream))
                 if t is not None]
        return min(found, default=None)

    def budget(self) -> float | None:
        """The staleness this flow's table may have when committed: its own target,
        tightened by every targeted table downstream less the hops in between (a DWS
        target of 10 s leaves DWD what the DWS hop does not take). ``None``: no target
        here or below."""
        found = [] if self.pacer.target.target_s is None else [self.pacer.target.target_s]
        for consumer in self.downstream:
            below = consumer.budget()
            if below is not None:
                found.append(below - consumer.hop_s())
        return min(found, default=None)

    def batch_seconds(self) -> float | None:
        """How long a batch may last before it is cut (:mod:`icetide.flows.sizing`): half
        the tightest freshness target it serves; ``None`` without any."""
        target = self.serves()
        return None if target is None else BATCH_SHARE * target

    def hop_s(self) -> float:
        """The staleness this flow's hop adds at most: the wait for its next start (its
        spacing, or its batch when longer) plus its batch."""
        cost = self.pacer.cost_s
        return max(self.spacing, cost) + cost

    def lag_in(self) -> float:
        """How stale this flow's input tables may be: the hops above it, worst path."""
        return max((u.lag_in() + u.hop_s() for u in self.upstream), default=0.0)

    def next_spacing(self, result: BatchResult | None) -> float:
        """Least seconds between this batch's start and the next: the freshness planner's
        interval for what the budget leaves this hop (its budget less the staleness of
        its inputs), at least the flow's own minimum; without any target, at least
        ``UNTARGETED_COST_FACTOR`` × its batch time."""
        budget = self.budget()
        hop = None if budget is None else budget - self.lag_in()
        spacing = max(self.pacer.plan_for(result, hop), self.loop.flow.min_spacing)
        if budget is None:
            spacing = max(spacing, UNTARGETED_COST_FACTOR * self.pacer.cost_s)
        return spacing

    def ready(self, now: float) -> bool:
        """Whether a batch may start now."""
        if self.running:
            return False
        if self.behind:
            return True
        due = now >= self.next_start and (self.dirty or now >= self.next_poll)
        return due and now >= self.held_until(now)

    def held_until(self, now: float) -> float:
        """Until when this flow waits for an upstream flow of its diamond that is running
        or about to (:meth:`holders`): ``dws.count_views_uv`` reads ``dwd.click_wide`` and
        ``dws.product_user``, which reads it too. Started at once on a DWD commit, it would
        run again for product_user's commit of the same clicks: a batch's fixed cost more,
        and counts and distinct users at different positions in between. It waits at most
        ``ALIGN_WAIT_FACTOR`` × that flow's batch time after its input changed, never
        longer than its own batch may last (half its tightest target). 0: not held."""
        busy = self.holders(now)
        if not busy:
            return 0.0
        wait = ALIGN_WAIT_FACTOR * max(u.pacer.cost_s for u in busy)
        return self.dirty_since + min(wait, self.batch_seconds() or wait)

    def holders(self, now: float) -> list[Slot]:
        """The flows of its diamond it waits for now (:meth:`held_until`): running or about
        to; not one behind (capped batches will not take the change in one), nor any once
        one committed since this flow's last batch (waiting again would chase the next)."""
        if any(u.name in self.fed_by for u in self.aligned):
            return []
        return [u for u in self.aligned if u.running or (u.ready(now) and not u.behind)]

    def due(self) -> float:
        """When its spacing and inputs let this slot start (its diamond aside) unless an
        upstream commit comes first."""
        if self.running:
            return math.inf
        if self.behind:
            return 0.0
        return self.next_start if self.dirty else max(self.next_start, self.next_poll)

    def wake_at(self, now: float) -> float:
        """When this slot becomes ready unless an upstream commit or batch end comes first."""
        return max(self.due(), self.held_until(now))

    def deadline(self) -> float:
        """Earliest deadline first: when its oldest pending input arrived (else when it
        became ready) plus the tightest target it serves. A click waiting at DWS arrived
        before the clicks waiting at ODS, so for one target the lower hop goes first."""
        since = self.pending_since if self.pending_since < math.inf else self.due()
        return since + self.target_s

    def order(self) -> tuple[float, float]:
        """The pick order: earliest deadline, then the flow whose batch started longest
        ago. Deadlines tie where one commit hands the same clicks to several flows
        (``product_user`` and ``count_views_uv`` both read DWD's): without the second key
        the slot list's order would win every such tie."""
        return self.deadline(), self.started

    def take(self, now: float) -> None:
        """A batch starts: it takes the pending input (a polled source keeps arriving)."""
        self.running, self.dirty, self.started = True, False, now
        self.fed_by.clear()
        self.batch_since = min(self.pending_since, now)
        self.pending_since = now if self.polls else math.inf

    def keep(self) -> None:
        """The batch failed: what it took stays pending, as old as it was."""
        self.pending_since = min(self.pending_since, self.batch_since)

    def left_behind(self) -> None:
        """The batch was capped: input is left, newer than what the batch took and handed
        downstream (a source is read in order). It counts from this batch's start, so a
        backlog's deadline moves on batch by batch: the hops below, holding its older
        clicks, go first, and a flow catching up does not keep the oldest deadline (and
        the workers) until it has caught up."""
        self.pending_since = min(self.pending_since, self.started)

    def poll_gap(self) -> float:
        """Seconds until the inputs are looked at again after a batch found nothing."""
        if self.polls:
            return min(self.spacing, POLL_S)
        return max(IDLE_POLL_MIN_S, IDLE_POLL_FACTOR * self.spacing)


class DagScheduler:
    """Runs the slots of one pipeline until ``stop`` is set or a flow fails."""

    def __init__(self, spark: SparkSession | None, slots: Sequence[Slot], concurrency: int,
                 on_batch: OnBatch | None = None, on_error: OnError | None = None, *,
                 maintenance: Maintenance | None = None,
                 extra_workers: ExtraWorkers = WHEN_LATE) -> None:
        self.spark = spark
        self.extra_workers = extra_workers
        self.maintenance = maintenance
        self._maintenance_job: Future[None] | None = None
        self._maintenance_after = 0.0  # monotonic: no pass before it (MAINTENANCE_GAP_FACTOR)
        self.slots = list(slots)
        self.concurrency = max(1, concurrency)
        self.on_batch = on_batch
        self.on_error = on_error
        #: A batch ended (or slots came in) since the scheduler last looked: it wakes.
        self._ended = threading.Event()
        self._errors: list[BaseException] = []
        self.pools = pool_names(self.slots)
        #: Slots handed in while the run goes on (:meth:`add`), admitted by its loop.
        self._incoming: list[Slot] = []
        self._incoming_lock = threading.Lock()
        #: Held while the slots' links change, and by a committed batch marking its
        #: consumers dirty.
        self._links = threading.Lock()
        self._overdue = OverdueWatch()  # says why a flow waits past its target

    def add(self, slots: Sequence[Slot]) -> None:
        """Join ``slots`` to a running scheduler (thread-safe): a flow compiled while the
        flows compiled before it already run. The run's loop links them to their
        producers and consumers (:func:`link` on every slot) before its next pick."""
        with self._incoming_lock:
            self._incoming.extend(slots)
        self._ended.set()

    def fail(self, exc: BaseException) -> None:
        """Stop the run with ``exc`` (e.g. a flow that could not be compiled)."""
        self._errors.append(exc)
        self._notify()

    def _admit(self) -> None:
        with self._incoming_lock:
            new, self._incoming = self._incoming, []
        if not new:
            return
        every = [*self.slots, *new]
        with self._links:
            for slot in every:
                slot.upstream, slot.downstream = [], []
            link(every, {s.name: s.reads for s in every}, {s.name: s.writes for s in every})
            self.slots = every
            self.pools = pool_names(every)

    def run(self, stop: threading.Event) -> None:
        """Drive the DAG; raises the first flow error after the running batches ended."""
        phase("scheduler")
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="flow") as pool, \
                ThreadPoolExecutor(1, thread_name_prefix="maintenance") as maintenance_pool:
            running: list[Future[None]] = []
            while not stop.is_set() and not self._errors:
                self._admit()
                running = [f for f in running if not f.done()]
                now = time.monotonic()
                for slot in self._pick(now, self.concurrency - len(running)):
                    slot.take(now)
                    running.append(pool.submit(self._batch, slot, stop))
                self._overdue.check(now, self.slots)
                self._maintain(maintenance_pool)
                self._idle(now)
            stop.set()
        if self._errors:
            first = self._errors[0]
            raise first if isinstance(first, IcetideError) else PipelineError(
                f"a flow failed: {first!r}") from first

    def _maintain(self, pool: ThreadPoolExecutor) -> None:
        """Maintenance in a slot of its own (one pass at a time, Spark pool
        ``maintenance``), never on a table whose writer is in a batch right now: a flow
        never waits for a worker, and a compaction rarely races its table's commit (one
        that does is retried by the loop without counting as a failure). Passes leave
        ``MAINTENANCE_GAP_FACTOR`` × their duration free after them: maintenance shares
        the cores with the flows instead of holding them while a backlog of passes drains."""
        if self.maintenance is None or (self._maintenance_job is not None
                                        and not self._maintenance_job.done()):
            return
        if time.monotonic() < self._maintenance_after:
            return
        busy = {table for slot in self.slots if slot.running for table in slot.writes}
        for table in self.maintenance.due(time.time()):
            if table not in busy:
                self._maintenance_job = pool.submit(self._maintain_one, table)
                return

    def _maintain_one(self, table: str) -> None:
        assert self.maintenance is not None
        if self.spark is not None:
            self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", MAINTENANCE_POOL)
        began = time.monotonic()
        try:
            self.maintenance.run(table)
        finally:
            ended = time.monotonic()
            self._maintenance_after = ended + MAINTENANCE_GAP_FACTOR * (ended - began)

    def _pick(self, now: float, free: int) -> list[Slot]:
        """The ready slots to start in :meth:`Slot.order`; at most one batch per target
        at a time. Two flows into one table (``profile_activity`` and ``profile_member``) would
        commit one after the other anyway (:class:`~icetide.lake.sinks.SerializedSink`):
        started together, the second holds a worker idle while the first writes. With
        batches running, a slot takes another worker only when it would be late waiting
        (:func:`~icetide.engine.workers.late`; ``extra_workers: always``: at once)."""
        ready = sorted((s for s in self.slots if s.ready(now)), key=Slot.order)
        busy = {s.target for s in self.slots if s.running}
        ends = [expected_end(s, now) for s in self.slots if s.running]
        picked: list[Slot] = []
        for slot in ready:
            if len(picked) == free:
                break
            if slot.target in busy or (ends and self.extra_workers == WHEN_LATE
                                       and not late(slot, now, ends)):
                continue
            busy.add(slot.target)
            picked.append(slot)
            ends.append(now + slot.pacer.cost_s)
        return picked

    def _idle(self, now: float) -> None:
        """Until the next slot may start. A slot still ready after :meth:`_pick` found no
        free worker or its target busy: it waits for a batch's end (:meth:`_notify`),
        not in a busy loop; one not late enough for a spare worker is looked at again
        within ``TICK_S``. A batch that ended since ``now`` is not waited for. The run's
        own ``stop`` ends it (looked at every ``TICK_S``), not a stop request: that ends
        the batches' retry waits, and ``icetide run`` sets ``stop`` with it."""
        wake = min((s.wake_at(now) for s in self.slots if not s.ready(now)), default=math.inf)
        pause(min(TICK_S, max(0.0, wake - now)) or 0.01, self._ended, interruptible=False)
        self._ended.clear()

    def _notify(self) -> None:
        self._ended.set()

    def _batch(self, slot: Slot, stop: threading.Event) -> None:
        began = time.monotonic()
        if self.spark is not None:  # FAIR pools: one heavy batch does not starve the rest
            self.spark.sparkContext.setLocalProperty("spark.scheduler.pool",
                                                     self.pools[slot.name])
        phase(f"first_batch {slot.name}")
        try:
            slot.pacer.retarget(slot.loop.lifecycle.state().freshness_s)
            slot.loop.batch_seconds = slot.batch_seconds()
            tried = slot.loop.attempt(slot.spacing)
            self._done(slot, tried, began)
        except Interrupted:
            stop.set()
        except BaseException as exc:
            log.error("flow %s stopped: %s", slot.name, exc)
            if self.on_error is not None:
                self.on_error(slot.loop, exc)
            self._errors.append(exc)
        finally:
            slot.running = False
            self._notify()

    def _done(self, slot: Slot, tried: Attempt, began: float) -> None:
        now = time.monotonic()
        if tried.retry_in is not None:
            slot.dirty, slot.behind = True, False
            slot.keep()
            slot.next_start = slot.next_poll = now + tried.retry_in
            return
        result = tried.result
        with self._links:  # the spacing reads the links (budgets up and down the DAG)
            slot.spacing = slot.next_spacing(result)
        slot.behind = result is not None and not result.caught_up
        if slot.behind:
            slot.left_behind()
        if result is None:  # nothing new: the spacing bounds commits, not looks
            slot.next_poll = now + slot.poll_gap()
            return
        slot.next_start = began + slot.spacing
        slot.next_poll = slot.next_start if slot.polls else now + slot.poll_gap()
        with self._links:
            for consumer in slot.downstream:
                if not consumer.dirty:
                    consumer.dirty, consumer.dirty_since = True, now
                consumer.pending_since = min(consumer.pending_since, slot.batch_since)
                consumer.fed_by.add(slot.name)
        phase(f"first_commit {slot.name}", detail=" ".join(
            [*(f"{k}={v:.2f}" for k, v in result.phases.items()), f"rows_in={result.rows_in}"]))
        if self.on_batch is not None:
            self.on_batch(result)


def default_concurrency(cores: int | None) -> int:
    """Batches run at once when ``flows.concurrency`` is not set: one per core (≥ 2)."""
    return max(2, cores or 2)
