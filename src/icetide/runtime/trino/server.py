"""Start, find and stop a home's local Trino (``icetide trino start|status|stop``).

One server per home, as the metastore: a state file names its process and port, a start
holds a file lock, the server runs detached (its own session) until ``icetide trino
stop``. It is Trino's own launcher (``bin/launcher run``, which execs the JVM: the pid is
the server's) on the Java of :mod:`icetide.runtime.trino.java`, data under
``<home>/trino``, bound to loopback, its one catalog the lake's catalog service.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.local_server import Detached, Recorded, start_lock, terminate
from icetide.runtime.metastore.service import embedded, ensure_metastore
from icetide.runtime.trino import dist
from icetide.runtime.trino.java import install_java, trino_java_home
from icetide.runtime.trino.site import TrinoPaths, check_host, write_etc

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrinoState(Recorded):
    """A running local Trino: its process and address."""

    SCHEME = "http"


def _info(host: str, port: int) -> dict[str, object] | None:
    """Trino's ``/v1/info``, or None when nothing (or not Trino) answers."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/v1/info", timeout=2.0) as resp:
            doc = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "nodeVersion" in doc else None


def _listens(host: str, port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://{host}:{port}/", timeout=2.0).close()
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False
    return True


def _schedules(state: TrinoState) -> bool:
    """Whether Trino runs a query: ``/v1/info`` says "started" a few seconds before the
    coordinator has registered itself as a node (``NO_NODES_AVAILABLE`` until then)."""
    request = urllib.request.Request(
        f"{state.uri}/v1/statement", data=b"SELECT 1", method="POST",
        headers={"X-Trino-User": "icetide"})
    try:
        for _ in range(100):
            with urllib.request.urlopen(request, timeout=5.0) as resp:
                doc = json.loads(resp.read())
            if not isinstance(doc, dict) or "error" in doc:
                return False
            if "nextUri" not in doc:
                return True
            request = urllib.request.Request(str(doc["nextUri"]),
                                             headers={"X-Trino-User": "icetide"})
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return False


def running(settings: Settings) -> TrinoState | None:
    """The home's Trino, if its process is alive and it has finished starting."""
    state = TrinoState.read(TrinoPaths.of(settings).state)
    if state is None:
        return None
    info = _info(state.host, state.port)
    return state if info is not None and info.get("starting") is False else None


def ensure_trino(settings: Settings, *, install: bool = True) -> TrinoState:
    """The home's Trino, started (detached) if it is not running; waits until it answers.

    ``install``: download the server (and a Java) first when the cache lacks them; else
    a missing server is an error (the tests: ``make install-test`` fetched it)."""
    cfg = settings.trino
    check_host(cfg.host)
    paths = TrinoPaths.of(settings)
    with start_lock(paths):
        state = running(settings)
        if state is not None:
            if (state.host, state.port) != (cfg.host, cfg.port):
                raise RuntimeSetupError(
                    f"this home's Trino runs at {state.uri}, not at {cfg.host}:{cfg.port} as "
                    "trino.host/port say: stop it (icetide trino stop) or change the settings")
            return state
        if _listens(cfg.host, cfg.port):
            raise RuntimeSetupError(
                f"{cfg.host}:{cfg.port} is taken by another program, not this home's Trino "
                f"({paths.root}): set trino.port (ICETIDE_TRINO__PORT) to a free port")
        java = install_java(settings) if install else trino_java_home(settings)
        server = dist.install(settings) if install else dist.require_installed(settings)
        if embedded(settings):
            ensure_metastore(settings)
        write_etc(settings, paths)
        return _spawn(settings, paths, server, java)


def _spawn(settings: Settings, paths: TrinoPaths, server: Path, java: Path) -> TrinoState:
    cfg = settings.trino
    paths.state.unlink(missing_ok=True)
    paths.data.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "JAVA_HOME": str(java),
           "PATH": f"{java / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [str(server / "bin" / "launcher"), "run", "--etc-dir", str(paths.etc),
           "--data-dir", str(paths.data)]
    began = time.monotonic()
    local = Detached("Trino", paths)
    proc = local.spawn(cmd, env=env, cwd=paths.root)
    state = TrinoState(proc.pid, cfg.host, cfg.port)
    state.write(paths.state)
    log.info("starting Trino %s at %s (log: %s)", dist.VERSION, state.uri, paths.log)
    local.await_ready(lambda: running(settings) == state and _schedules(state),
                      timeout=cfg.start_timeout, interval=0.5, what=f"Trino at {state.uri}",
                      hint="trino.start_timeout bounds its start; ")
    log.info("Trino answers at %s after %.1f s", state.uri, time.monotonic() - began)
    return state


def stop_trino(settings: Settings, timeout: float = 30.0) -> TrinoState | None:
    """Stop the home's Trino (SIGTERM, then SIGKILL after ``timeout``); the one stopped."""
    paths = TrinoPaths.of(settings)
    state = TrinoState.read(paths.state)
    if state is None:
        paths.state.unlink(missing_ok=True)
        return None
    terminate(state.pid, timeout, "Trino")
    paths.state.unlink(missing_ok=True)
    return state
