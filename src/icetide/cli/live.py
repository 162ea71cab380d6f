"""The demo's live terminal view: a table of the lake refreshed every second.

Each refresh reads table metadata only (:func:`icetide.app.status.collect_status`, no
Spark job, no source lag), so it runs beside the flows without slowing them down: per
table its live rows, last commit, data freshness against its target and dead letters
(:func:`icetide.cli.render.live_table`). The title carries the demo's progress (phase —
``warming up`` before the measured window —, elapsed time, clicks produced, where the
dimensions come from); once the flows stopped, each table is judged over the measured
window, as the caption says. Piped or logged (no
terminal), only the final table is printed, as wide as it needs.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

from icetide.app.status import collect_status
from icetide.cli.render import live_table, print_uncut
from icetide.config import Settings
from icetide.devkit.demo.report import DemoProgress
from icetide.lake.hudi_timeline import HudiTimeline
from icetide.query.hudi_info import hudi_tables
from icetide.runtime.catalogs import ReadCatalog, pyiceberg_catalog
from icetide.tables.changelog import CHANGELOG_SUFFIX

log = logging.getLogger(__name__)


#: Demo phases after the continuous flows ended: a table is judged by the freshness its
#: commits achieved in the measured window, not by its age since the generators stopped.
STOPPED = ("draining", "reconciling", "done")
#: Seconds between two looks for the catalog's Hudi tables (the metastore is asked).
HUDI_EVERY_S = 10.0


class LiveStatus:
    """``with LiveStatus(settings, console):`` shows the lake's tables until the block ends."""

    def __init__(self, settings: Settings, console: Console, *, interval: float = 1.0,
                 tables: list[str] | None = None, catalog: ReadCatalog | None = None,
                 progress: DemoProgress | None = None) -> None:
        self.catalog = catalog or pyiceberg_catalog(settings)
        self.settings = settings
        self._hudi_found: dict[str, HudiTimeline] = {}
        self._hudi_at = -HUDI_EVERY_S
        self.tables = tables
        self.progress = progress
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._last: RenderableType = Text("waiting for the first commit…")
        self.console = console
        self.live = Live(console=console, get_renderable=self.render,
                         refresh_per_second=1 / interval, transient=False)

    def render(self) -> RenderableType:
        """The current table (the last good one if metadata is being rewritten)."""
        with self._lock:
            try:
                stopped = self.progress is not None and self.progress.phase in STOPPED
                window = self.progress.window() if self.progress is not None else None
                rows = [row for row in collect_status(
                            self.catalog, self.tables, window=window,
                            running=(lambda _t, _f: False) if stopped else None,
                            hudi=self._hudi())
                        if CHANGELOG_SUFFIX not in row.table]  # side tables of the flows
                title = (self.progress.line() if self.progress is not None
                         else f"icetide demo: {time.monotonic() - self.started:.0f}s")
                self._last = live_table(rows, title=title)
            except Exception as exc:  # a half-written metadata file: keep the last table
                log.debug("live view refresh failed: %s", exc)
            return self._last

    def _hudi(self) -> dict[str, HudiTimeline]:
        """The catalog's Hudi tables, asked again every :data:`HUDI_EVERY_S` (one appears
        on its first commit); none but in a Hive catalog."""
        if self.settings.catalog.type != "hive":
            return {}
        if time.monotonic() - self._hudi_at >= HUDI_EVERY_S:
            self._hudi_found = {name: HudiTimeline(location, self.settings)
                                for name, location in hudi_tables(self.settings).items()}
            self._hudi_at = time.monotonic()
        return self._hudi_found

    def __enter__(self) -> LiveStatus:
        if self.console.is_terminal:  # piped or logged: only the final table, once
            self.live.start(refresh=True)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.console.is_terminal:
            self.live.refresh()
            self.live.stop()
            return
        print_uncut(self.console, self.render())  # never cut to 80 columns
