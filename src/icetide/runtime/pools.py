"""Spark FAIR scheduler pools: flow batches first, maintenance on the cores they leave.

The pipeline scheduler (:mod:`icetide.engine.scheduler`) runs each flow batch in pool
:data:`FLOWS_POOL` and each maintenance pass in :data:`MAINTENANCE_POOL`. Spark's FAIR
algorithm offers a free core to a pool below its minimum share before any other, so:

* ``flows`` has a minimum share no cluster reaches: whenever a flow batch has a task
  waiting, it gets the next free core; inside the pool, concurrent batches share the
  cores fairly (FAIR between their stages), so one heavy batch does not starve the rest;
* ``maintenance`` (minimum share 0) gets the cores no flow task waits for — between a
  flow's stages, during its planning and commit — so compaction and expiry fill spare
  capacity instead of slowing the next commit. A running task is never preempted: a
  maintenance task delays a flow by at most its own length.
"""

from __future__ import annotations

import os
from pathlib import Path

FLOWS_POOL = "flows"
MAINTENANCE_POOL = "maintenance"
#: Above any cluster's core count: ``flows`` is always "below its minimum share".
ALWAYS_FIRST = 1 << 20

_ALLOCATIONS = f"""\
<?xml version="1.0"?>
<!-- written by icetide (runtime/pools.py); Spark reads it at session start -->
<allocations>
  <pool name="{FLOWS_POOL}">
    <schedulingMode>FAIR</schedulingMode>
    <weight>1</weight>
    <minShare>{ALWAYS_FIRST}</minShare>
  </pool>
  <pool name="{MAINTENANCE_POOL}">
    <schedulingMode>FIFO</schedulingMode>
    <weight>1</weight>
    <minShare>0</minShare>
  </pool>
</allocations>
"""


def allocation_file(cache_dir: Path) -> Path:
    """The pools' allocation file in ``cache_dir`` (rewritten only when it differs)."""
    path = cache_dir / "fairscheduler-icetide.xml"
    if not path.is_file() or path.read_text() != _ALLOCATIONS:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(_ALLOCATIONS)
        os.replace(tmp, path)
    return path
