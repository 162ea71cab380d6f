"""The restarts of ``python -m benchmarks.restart``: one home with the clickstream pipeline
and data flowing, the pipeline killed (-9, its whole process tree) and started again.

The home, broker, MariaDB and the pipeline process are the freshness benchmark's
(:mod:`benchmarks.freshness.run`); clicks and business updates flow from this process
for the whole run. The metastore service is started here first, so it is no child of a
pipeline and outlives the kills, as it does in a deployment.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cpu import descendants
from benchmarks.freshness.run import TOPIC, WARMUP_CLICKS, Load, lake_settings, pipeline_process
from benchmarks.freshness.trace import LAYERS, commits
from benchmarks.restart.cpu_timeline import CpuTimeline
from benchmarks.restart.phases import Restart, batch_detail, parse
from icetide.config import Settings
from icetide.devkit.embedded.kinds import embedded_broker
from icetide.devkit.gen.business import BusinessOptions, run_business_updates
from icetide.devkit.gen.clicks import GenOptions, produce_clicks

#: A cold start of a new lake (tables created) may take this long.
FIRST_START_S = 300.0
#: A restart whose layer has not committed after this long counts as none.
RESTART_S = 180.0
#: The first start's label: a new lake, not a restart (not reported).
COLD = "cold"


@dataclass(frozen=True)
class Plan:
    """What a run does: ``restarts`` kill/restart cycles per tree, alternating trees
    (``trees``: label → a checkout's ``src``), clicks/s flowing meanwhile."""

    trees: dict[str, Path]
    restarts: int
    rate: float = 2_000.0
    partitions: int = 4
    seed: int = 43
    #: Seconds the pipeline stays down after each kill (clicks keep coming: a backlog of
    #: rate × outage events waits for the restart).
    outage: float = 0.0


#: The pseudo-layer "ODS within 10 s": the first ODS commit after the restart whose
#: newest event is at most this old when committed (the backlog is caught up).
CAUGHT_UP, CAUGHT_UP_MS = "ODS fresh", 10_000


def _firsts(catalog: Any, after_ms: int) -> dict[str, float]:
    """Per layer (and :data:`CAUGHT_UP`), the epoch seconds of its first commit after
    ``after_ms`` so far."""
    found: dict[str, float] = {}
    for layer, (table, flows) in LAYERS.items():
        with contextlib.suppress(Exception):  # a table not created yet
            new = [c for c in commits(catalog, table, flows) if c.committed_ms > after_ms]
            if new:
                found[layer] = min(c.committed_ms for c in new) / 1000
            fresh = [c.committed_ms for c in new if layer == "ODS" and c.max_event_ms
                     and c.committed_ms - c.max_event_ms <= CAUGHT_UP_MS]
            if fresh:
                found[CAUGHT_UP] = min(fresh) / 1000
    return found


def _wait_commits(catalog: Any, proc: Any, after_ms: int, timeout: float) -> dict[str, float]:
    """Per layer, the epoch seconds of its first commit after ``after_ms`` (and when ODS
    was fresh again), until each has one, the process exits or ``timeout`` passes."""
    found: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(found) <= len(LAYERS) and time.monotonic() < deadline and proc.poll() is None:
        found = _firsts(catalog, after_ms)
        time.sleep(0.5)
    return found


def _kill_tree(pid: int, spare: Sequence[int]) -> None:
    """SIGKILL ``pid`` and everything below it but ``spare`` (the metastore service)."""
    for victim in descendants(pid):
        if victim not in spare:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)


def _metastore_pids(settings: Settings) -> list[int]:
    from icetide.runtime.metastore.service import running

    state = running(settings)
    return descendants(state.pid) if state is not None else []


@contextlib.contextmanager
def _flowing(bootstrap: str, shop: Any, plan: Plan) -> Iterator[None]:
    """Clicks at ``plan.rate`` and 2 business changes/s until the block ends."""
    stop = threading.Event()
    workers = [
        threading.Thread(target=produce_clicks, args=(bootstrap, TOPIC, GenOptions(
            count=0, rate=plan.rate, partitions=plan.partitions, seed=2)),
            kwargs={"stop": stop}, daemon=True),
        threading.Thread(target=run_business_updates, args=(
            shop.connect, BusinessOptions(rate=2.0, seed=7), stop), daemon=True),
    ]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)


def _cycle(settings: Settings, shop: Any, catalog: Any, tree: str, src: Path,
           pause: float, outage: float = 0.0) -> Restart:
    """Start ``src``'s pipeline, wait for every layer's commit, run ``pause`` more seconds,
    kill -9, stay down ``outage`` seconds; the restart measured is this start (its spawn,
    phases and first commits)."""
    log = settings.home / "pipeline.log"
    offset = log.stat().st_size if log.exists() else 0
    spawned = time.time()  # the killed process commits nothing after its kill
    with pipeline_process(settings, shop, src, Load(rate=0, seconds=0), verbose=True) as proc, \
            CpuTimeline(proc.pid) as cpu:
        found = _wait_commits(catalog, proc, int(spawned * 1000),
                              FIRST_START_S if tree == COLD else RESTART_S)
        if proc.poll() is not None:
            raise SystemExit(f"the pipeline ({tree}) exited with {proc.returncode}; "
                             f"see {log}")
        time.sleep(pause)
        _kill_tree(proc.pid, _metastore_pids(settings))
        proc.wait(30)
    time.sleep(outage)  # down: the clicks of the outage wait in the broker
    with log.open("rb") as fh:
        fh.seek(offset)
        text = fh.read().decode(errors="replace")
    on_way = cpu.at(found["ODS"]) if "ODS" in found else {}
    return Restart(tree, spawned, parse(text), found, batch_detail(text), on_way)


def measure(home: Path, plan: Plan) -> list[Restart]:
    """A cold start (not counted), then ``plan.restarts`` restarts per tree, alternating."""
    from icetide.devkit.demo.shop import shop_database
    from icetide.runtime.catalogs import pyiceberg_catalog
    from icetide.runtime.metastore.service import ensure_metastore, stop_metastore

    home.mkdir(parents=True)
    rng = random.Random(plan.seed)
    with embedded_broker("tansu", home / "broker") as broker:
        settings = lake_settings(home, broker.bootstrap, None)
        produce_clicks(broker.bootstrap, TOPIC, GenOptions(
            count=WARMUP_CLICKS, partitions=plan.partitions, seed=1))
        os.environ["ICETIDE_METASTORE__PORT"] = str(settings.metastore.port)
        ensure_metastore(settings)  # a child of this process, not of a pipeline
        try:
            with shop_database(settings, None) as shop, _flowing(broker.bootstrap, shop, plan):
                catalog = pyiceberg_catalog(settings)
                order = list(plan.trees.items())
                _cycle(settings, shop, catalog, COLD, order[-1][1], 2.0, plan.outage)
                restarts = []
                for _ in range(plan.restarts):
                    for tree, src in order:
                        restarts.append(_cycle(settings, shop, catalog, tree, src,
                                               rng.uniform(0.0, 4.0), plan.outage))
        finally:
            stop_metastore(settings)
    return restarts
