"""Flow leases on files: exclusive per key, named holder, released when the holder dies."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from icetide.config import CatalogConfig, Settings
from icetide.runtime.leases import (
    FileLeases,
    FlowAlreadyRunning,
    PostgresLeases,
    lease_key,
    leases_for,
)


def test_a_second_holder_is_refused_with_who_holds_it(tmp_path: Path) -> None:
    leases = FileLeases(tmp_path)
    key = lease_key("lake.ods.clicks", "clicks")
    with leases.hold([key]):
        with (pytest.raises(FlowAlreadyRunning, match=r"lake\.ods\.clicks::clicks.*pid \d+"),
              leases.hold([key])):
            pass
        with leases.hold([lease_key("lake.ods.clicks", "other")]):
            pass  # another flow into the same table is another writer
    with leases.hold([key]):
        pass  # released with the block


def test_the_lease_goes_when_its_holder_is_killed(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from pathlib import Path\n"
         "from icetide.runtime.leases import FileLeases\n"
         f"with FileLeases(Path({str(tmp_path)!r})).hold(['k']):\n"
         "    print('held', flush=True); time.sleep(600)\n"],
        stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    with pytest.raises(FlowAlreadyRunning, match=f"pid {holder.pid}"), \
            FileLeases(tmp_path).hold(["k"]):
        pass
    holder.kill()  # SIGKILL: no cleanup code runs
    holder.wait()
    deadline = time.monotonic() + 5
    while True:
        try:
            with FileLeases(tmp_path).hold(["k"]):
                break
        except FlowAlreadyRunning:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_lease_store_follows_the_catalog(tmp_path: Path) -> None:
    hadoop = leases_for(Settings(home=tmp_path, catalog=CatalogConfig(type="hadoop")))
    assert isinstance(hadoop, FileLeases)
    assert hadoop.folder == tmp_path / "warehouse" / ".icetide-leases"
    jdbc = leases_for(Settings(home=tmp_path, catalog=CatalogConfig(
        type="jdbc", uri="jdbc:postgresql://127.0.0.1:5433/lake?ssl=false", user="u")))
    assert isinstance(jdbc, PostgresLeases) and jdbc.dsn == "postgresql://127.0.0.1:5433/lake"
    rest = leases_for(Settings(home=tmp_path, catalog=CatalogConfig(
        type="rest", uri="http://127.0.0.1:8181")))
    assert isinstance(rest, FileLeases) and rest.folder == tmp_path / "leases"


def test_held_tells_whether_a_run_holds_a_flow(tmp_path: Path) -> None:
    leases = FileLeases(tmp_path)
    assert leases.held("lake.ods.clicks::clicks") is False
    with leases.hold(["lake.ods.clicks::clicks"]):
        holder = subprocess.run(
            [sys.executable, "-c", "from pathlib import Path\n"
             "from icetide.runtime.leases import FileLeases\n"
             f"print(FileLeases(Path({str(tmp_path)!r})).held('lake.ods.clicks::clicks'))"],
            capture_output=True, text=True, check=True)
        assert holder.stdout.strip() == "True"
    assert leases.held("lake.ods.clicks::clicks") is False
