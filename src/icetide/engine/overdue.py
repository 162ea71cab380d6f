"""Saying why a flow's input waits past its freshness target: a WARNING naming what held it.

The scheduler (:mod:`icetide.engine.scheduler`) decides when batches start. When a flow's
oldest pending input is already older than the tightest target the flow serves and no
batch of it starts, something holds it: its spacing, a diamond's wait for an upstream
flow, no free worker, or another flow writing its table. A batch can also simply run
longer than the target. Either way the table will miss its freshness; this module says so
at the moment it happens, with the state that decided it (which flows held the workers and
for how long), so a miss is explained by its own log instead of by reproducing it.

Each flow is reported at most once per :data:`REPEAT_S` (the line counts the waits not
reported since), and once per wait: a pipeline that misses its targets all the time logs
a line a minute per flow, not one per batch.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icetide.engine.scheduler import Slot

log = logging.getLogger(__name__)

#: A flow's waits are reported at most once per this many seconds.
REPEAT_S = 60.0


@dataclass
class _Said:
    """What was reported for one flow: the wait (its key) and when; waits since unsaid."""

    key: tuple[str, float] = ("", -math.inf)
    at: float = -math.inf
    unsaid: int = 0


@dataclass
class OverdueWatch:
    """Looks at the slots after each pick and warns about a flow kept past its target."""

    said: dict[str, _Said] = field(default_factory=dict)
    #: When it first looked: a wait counts from the run's start at the earliest (a slot's
    #: input is "pending since" 0, the clock's origin, before its first batch).
    since: float | None = None

    def check(self, now: float, slots: Sequence[Slot]) -> None:
        """Warn about each slot whose pending input (or running batch) is past its target."""
        if self.since is None:
            self.since = now
        for slot in slots:
            found = _overdue(slot, now, slots, self.since)
            if found is not None:
                self._say(slot, now, *found)

    def _say(self, slot: Slot, now: float, key: tuple[str, float], message: str) -> None:
        said = self.said.setdefault(slot.name, _Said())
        if said.key == key:
            return  # this wait was counted already
        said.key = key
        if now - said.at < REPEAT_S:
            said.unsaid += 1
            return
        since = f" ({said.unsaid} more such waits since the last warning)" if said.unsaid else ""
        log.warning("flow %s: %s%s", slot.name, message, since)
        said.at, said.unsaid = now, 0


def _overdue(slot: Slot, now: float, slots: Sequence[Slot],
             since: float) -> tuple[tuple[str, float], str] | None:
    """``(the wait's key, why)`` when ``slot`` is past the target it serves, else ``None``;
    ``since``: when the run began (no wait counts from before it)."""
    target = slot.serves()
    if target is None:  # no target here or below: nothing to miss
        return None
    if slot.running:
        took = now - slot.started
        if took <= target:
            return None
        return ("batch", slot.started), (
            f"its batch has run {took:.1f}s, longer than the {target:g}s freshness target "
            f"it serves; running beside it: {_running(now, slots, slot)}")
    waited = now - max(slot.pending_since, since)
    if not math.isfinite(waited) or waited <= target:
        return None
    return ("wait", slot.pending_since), (
        f"its oldest input has waited {waited:.1f}s, past the {target:g}s freshness "
        f"target it serves: {_why_waiting(slot, now, slots)}")


def _why_waiting(slot: Slot, now: float, slots: Sequence[Slot]) -> str:
    """What keeps a slot with pending input from starting a batch now."""
    if slot.ready(now):
        writer = next((s for s in slots if s.running and s.target == slot.target), None)
        if writer is not None:
            return f"its table {slot.target} is being written by {writer.name}"
        return f"no free worker; running: {_running(now, slots, slot)}"
    held = slot.held_until(now)
    if held > now:
        names = ", ".join(u.name for u in slot.holders(now))
        return f"held {held - now:.1f}s more for {names} (same input, a diamond)"
    if now < slot.next_start:
        return (f"its next start is due in {slot.next_start - now:.1f}s (its spacing "
                f"{slot.spacing:.1f}s, or a retry's wait)")
    return f"its inputs are looked at again in {max(0.0, slot.next_poll - now):.1f}s"


def _running(now: float, slots: Sequence[Slot], but: Slot) -> str:
    """The other running batches and how long each has run, longest first."""
    busy = sorted((s for s in slots if s.running and s is not but), key=lambda s: s.started)
    return ", ".join(f"{s.name} {now - s.started:.1f}s" for s in busy) or "nothing"
