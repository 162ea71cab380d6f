"""The page's data for all clients: table metadata at once, source lag apart.

:class:`StateFeed` reads the tables (metadata only, well under a second) at most once per
``refresh`` seconds. Source lag asks brokers and databases, which takes seconds when one
is down (a Kafka client retries before it gives up), so :class:`LagFeed` fetches it in a
thread of its own and the page renders what it has at once: each state carries the
newest lag fetched, or says it is still being fetched (``"lag": {"state": "pending"}``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import anyio.to_thread

from icetide.app.context import Context
from icetide.app.lag import SourceLag
from icetide.errors import IcetideError

log = logging.getLogger(__name__)

Lags = Mapping[str, Sequence[SourceLag]]


class LagFeed:
    """Source lag per table, fetched in a daemon thread (:meth:`poke`) at most once per
    ``refresh`` seconds; :meth:`latest` never waits for it."""

    def __init__(self, fetch: Callable[[], Lags], refresh: float) -> None:
        self.fetch, self.refresh = fetch, refresh
        self._lock = threading.Lock()
        self._lags: Lags | None = None
        self._fetched_ms: int | None = None
        self._error: str | None = None
        self._started = float("-inf")
        self._thread: threading.Thread | None = None

    def latest(self) -> tuple[Lags | None, dict[str, object]]:
        """The newest lag (None: none fetched yet) and how it stands, for the page."""
        with self._lock:
            info: dict[str, object] = {"state": "pending" if self._lags is None else "ready",
                                    "fetched_ms": self._fetched_ms, "error": self._error}
            return self._lags, info

    def poke(self) -> None:
        """Start a fetch when the last one began ``refresh`` seconds ago and none runs."""
        with self._lock:
            idle = self._thread is None or not self._thread.is_alive()
            if idle and time.monotonic() - self._started >= self.refresh:
                self._started = time.monotonic()
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="icetide-dashboard-lag")
                self._thread.start()

    def _run(self) -> None:
        try:
            lags, error = self.fetch(), None
        except Exception as exc:  # a catalog or source that cannot be asked: say so
            log.warning("fetching source lag for the dashboard failed: %s", exc)
            lags, error = None, f"{type(exc).__name__}: {exc}"
        with self._lock:
            if lags is not None:
                self._lags, self._fetched_ms = lags, int(time.time() * 1000)
            self._error = error


class StateFeed:
    """The page's data, computed at most once per ``refresh`` seconds for all clients
    (in a worker thread: reading metadata blocks), with the newest :class:`LagFeed`
    answer (``lag``: on) or none."""

    def __init__(self, ctx: Context, refresh: float, lag: bool) -> None:
        self.ctx, self.refresh = ctx, refresh
        self.lags = LagFeed(ctx.source_lags, refresh) if lag else None
        self._lock = asyncio.Lock()
        self._at = 0.0
        self._data = ""

    def _compute(self) -> str:
        lags, info = self.lags.latest() if self.lags is not None else (None, {"state": "off"})
        try:
            state: dict[str, object] = self.ctx.dashboard(lag=False, lags=lags).to_json()
            state["lag"] = info
        except IcetideError as exc:
            state = {"error": str(exc), "generated_ms": int(time.time() * 1000)}
        except Exception as exc:  # a catalog that cannot be read now: show it, keep serving
            log.exception("reading the dashboard's data failed")
            state = {"error": f"reading the lake failed: {type(exc).__name__}: {exc}",
                     "generated_ms": int(time.time() * 1000)}
        if self.lags is not None:  # after the state: the context's pipeline is loaded once
            self.lags.poke()
        return json.dumps(state, default=str)

    async def get(self) -> str:
        """The newest data as JSON text (recomputed when older than ``refresh``)."""
        async with self._lock:
            if not self._data or time.monotonic() - self._at >= self.refresh:
                self._data = await anyio.to_thread.run_sync(self._compute)
                self._at = time.monotonic()
            return self._data
