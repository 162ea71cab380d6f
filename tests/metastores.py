"""Stop the metastore services that tests started under the pytest temp folder."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

_DEPTHS = ("*", "*/*", "*/*/*", "*/*/*/*")
#: Ports of services that session fixtures keep for every test (never stopped per test).
KEEP: set[int] = set()


def _alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_metastores_under(root: Path) -> int:
    """SIGTERM (then SIGKILL) every service whose home is under ``root``, but those on a
    port in :data:`KEEP`."""
    stopped = 0
    for depth in _DEPTHS:
        for state in root.glob(f"{depth}/metastore/service.json"):
            try:
                data = json.loads(state.read_text())
            except (OSError, ValueError):
                continue
            if int(data.get("port", -1)) in KEEP or not _alive(int(data["pid"])):
                continue
            pid = int(data["pid"])
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            state.unlink(missing_ok=True)
            stopped += 1
    return stopped
