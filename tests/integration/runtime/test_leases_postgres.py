"""Flow leases of a jdbc catalog: advisory locks in its PostgreSQL, released with the session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from icetide.config import CatalogConfig, Settings
from icetide.devkit.embedded.postgres import EmbeddedPostgres
from icetide.runtime.leases import FlowAlreadyRunning, PostgresLeases, leases_for

pytestmark = pytest.mark.postgres


def _leases(postgres: EmbeddedPostgres, tmp_path: Path) -> PostgresLeases:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(
        name="pg", type="jdbc", uri=postgres.jdbc_url, user=postgres.user))
    leases = leases_for(settings)
    assert isinstance(leases, PostgresLeases)
    return leases


def test_advisory_lease_is_exclusive_and_dies_with_its_holder(
        postgres: EmbeddedPostgres, tmp_path: Path) -> None:
    leases = _leases(postgres, tmp_path)
    running = r"clicks::clicks is already running \(icetide pid \d+"
    with leases.hold(["lake.ods.clicks::clicks"]), \
            pytest.raises(FlowAlreadyRunning, match=running), \
            leases.hold(["lake.ods.clicks::clicks"]):
        pass
    code = ("import time\n"
            "from icetide.runtime.leases import PostgresLeases\n"
            f"with PostgresLeases({leases.dsn!r}, {leases.user!r}, None).hold(['k']):\n"
            "    print('held', flush=True); time.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    with pytest.raises(FlowAlreadyRunning, match=f"pid {holder.pid}"), leases.hold(["k"]):
        pass
    holder.kill()  # SIGKILL: the server ends the session, and the lock with it
    holder.wait()
    deadline = time.monotonic() + 10
    while True:
        try:
            with leases.hold(["k"]):
                break
        except FlowAlreadyRunning:
            assert time.monotonic() < deadline
            time.sleep(0.1)
