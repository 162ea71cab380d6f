"""A flow's view of its target's lifecycle state (``icetide table suspend|resume|
set-freshness``), read from the table's properties at most every ``STATE_TTL_S``."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from icetide.lake.table_state import TableState, table_state

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: Seconds a flow trusts the last read of its target's state: a change takes effect at
#: the next batch after at most this long, for the price of one catalog look-up.
STATE_TTL_S = 2.0


class Lifecycle:
    """The state of one flow's target, cached for ``STATE_TTL_S``."""

    def __init__(self, spark: SparkSession, flow: str, target: str) -> None:
        self.spark, self.flow, self.target = spark, flow, target
        self._read: tuple[float, TableState] | None = None  # (read at, state)

    def state(self) -> TableState:
        if self.spark is None:  # a loop without a session (a scheduler's unit test)
            return TableState()
        now = time.monotonic()
        if self._read is not None and now - self._read[0] < STATE_TTL_S:
            return self._read[1]
        found = (table_state(self.spark, self.target)
                 if self.spark.catalog.tableExists(self.target) else TableState())
        was = self._read[1] if self._read is not None else TableState()
        if found.suspended != was.suspended:
            log.info("flow %s: %s is %s", self.flow, self.target,
                     "suspended (icetide table resume to go on)" if found.suspended
                     else "resumed")
        self._read = (now, found)
        return found
