"""Waiting for the metrics a ``Dataset.observe`` gathered during an action.

Spark hands observed metrics to a query listener on its listener bus shortly after the
action returns, and PySpark's ``Observation.get`` blocks on them with no bound. An action
whose plan did not run the observing node (adaptive execution can drop it over an input
found empty at run time) completes the observation without figures, or not at all; the
caller then counts for itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from icetide.errors import NotReadyError
from icetide.runtime.retry import backoff, wait_until

if TYPE_CHECKING:
    from pyspark.sql import Observation

log = logging.getLogger(__name__)

#: Seconds :func:`observed` waits for Spark's listener bus to deliver the metrics.
OBSERVE_WAIT = 30.0


def observed(obs: Observation, what: str, wait: float = OBSERVE_WAIT) -> dict[str, Any]:
    """The metrics ``obs`` gathered, waiting up to ``wait`` seconds for them; empty when
    they do not come (``what`` names them in the log)."""
    # PySpark offers only the blocking get; the JVM Observation's future can be polled.
    future = obs._jo.future()  # type: ignore[union-attr]
    try:  # a batch being committed: a stop request lets it finish
        wait_until(future.isCompleted, timeout=wait, interval=backoff(0.001, 0.05),
                   what=what, interruptible=False)
    except NotReadyError:
        log.warning("no %s after %.0fs", what, wait)
        return {}
    return dict(obs.get)
