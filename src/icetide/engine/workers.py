"""Whether a ready flow takes a worker beyond the first: only when it would be late.

Batches share the machine's cores: two at once on 2 cores each took 1.6× the time they
take alone (docs/benchmarks.md, "One batch at a time"). One worker alone, though, lets a
long batch (a materialized view over a growing day, a catch-up) hold back a flow with a
tight target, and leaves a backlog to one batch at a time. So by default
(``flows.extra_workers: when_late``) the first worker takes any ready flow, earliest
deadline first, and the others only a flow that would be *late* waiting for one: started
when the first running batch is expected to end, its batch and the batches of the hops
below it on the way to the tightest target it serves (each about its average batch time)
would carry its oldest input there past its deadline
(:meth:`icetide.engine.scheduler.Slot.deadline`). ``always``: every free worker takes a
ready flow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.config.sections import ExtraWorkers

if TYPE_CHECKING:
    from icetide.engine.scheduler import Slot

WHEN_LATE: ExtraWorkers = "when_late"


def below_s(slot: Slot) -> float:
    """Seconds the hops below ``slot`` take to carry its commit to the tightest target it
    serves: the longest path of their average batch times through the consumers that
    serve that target (0 for the target's own flow, or without a target)."""
    tightest = slot.serves()
    if tightest is None:
        return 0.0
    return max((c.pacer.cost_s + below_s(c) for c in slot.downstream
                if c.serves() == tightest), default=0.0)


def expected_end(slot: Slot, now: float) -> float:
    """When ``slot``'s running batch should end: its start plus its average batch time
    (``now`` once it runs longer than that)."""
    return max(now, slot.started + slot.pacer.cost_s)


def late(slot: Slot, now: float, ends: Sequence[float]) -> bool:
    """Whether ``slot``, started once the first of the batches in ``ends`` (their expected
    ends) is over, would carry its oldest input past its deadline."""
    free_at = max(now, min(ends, default=now))
    return free_at + slot.pacer.cost_s + below_s(slot) > slot.deadline()
