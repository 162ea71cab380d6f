"""The pipeline's DAG: which flow feeds which, how deep each sits, and its Spark pools.

:func:`link` connects the scheduler's slots (:class:`icetide.engine.scheduler.Slot`)
producer to consumer through the lake tables they write and read; :func:`pool_names`
names each flow's Spark FAIR pool so that Spark's tie-break follows the scheduler's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icetide.engine.scheduler import Slot


def ancestors(slot: Slot) -> set[int]:
    """The ids of every flow above ``slot`` in the run."""
    found: set[int] = set()
    for u in slot.upstream:
        found |= {id(u), *ancestors(u)}
    return found


def depth(slot: Slot) -> int:
    """Hops above this flow in the run: 0 for ODS, 2 for DWS fed by DWD fed by ODS."""
    return max((depth(u) + 1 for u in slot.upstream), default=0)


def pool_names(slots: Sequence[Slot]) -> dict[str, str]:
    """Each flow's Spark FAIR pool, named by its priority: ``"000 ods.clicks"``.

    Spark hands a free core to the pool with the fewest running tasks per weight, and
    between equals to the pool whose *name* sorts first. By flow name alone, ``dws.*``
    and ``maintenance`` would beat ``ods.*``: the flow with the tightest target would
    lose every tie. The rank is the scheduler's own order: the tightest target served
    first, for one target the hop furthest down (it holds the oldest input). The
    maintenance pool's name, a letter, sorts after every flow's.
    """
    ranked = sorted(slots, key=lambda s: (s.target_s, -depth(s), s.name))
    return {slot.name: f"{rank:03d} {slot.name}" for rank, slot in enumerate(ranked)}


def link(slots: Sequence[Slot], inputs: dict[str, frozenset[str]],
         outputs: dict[str, frozenset[str]]) -> None:
    """Connect producers to consumers and decide which slots must poll.

    ``inputs``: flow name → lake tables its sources read; ``outputs``: flow name → lake
    tables it commits to (target and side tables such as a changelog).
    """
    written = {table: slot for slot in slots for table in outputs.get(slot.name, ())}
    for slot in slots:
        flow = slot.loop.flow
        reads = inputs.get(slot.name, frozenset())
        external = any(not src.lake_inputs() for src in flow.sources.values())
        slot.polls = external or any(table not in written for table in reads)
        for table in reads:
            producer = written.get(table)
            if producer is not None and producer is not slot and slot not in producer.downstream:
                producer.downstream.append(slot)
                slot.upstream.append(producer)
    for slot in slots:
        inputs_of = {id(u) for u in slot.upstream}
        slot.aligned = [u for u in slot.upstream if ancestors(u) & (inputs_of - {id(u)})]
