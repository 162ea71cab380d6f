"""The local services' ``heap`` and ``start_timeout`` settings change what starts and how
long a start may take (docs/options.md): the metastore's JVM runs with ``-Xmx<heap>``,
Trino's ``etc/jvm.config`` says its ``-Xmx``, and a start longer than ``start_timeout``
stops the process and fails naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import CatalogConfig, MetastoreConfig, Settings, TrinoConfig
from icetide.devkit.embedded.process import free_port
from icetide.errors import IcetideError
from icetide.runtime.metastore.service import ensure_metastore, running, stop_metastore
from icetide.runtime.trino import server as trino
from icetide.runtime.trino.site import TrinoPaths


def _java_below(pid: int) -> str:
    """The command line of the first ``java`` process below ``pid``."""
    todo = [pid]
    while todo:
        proc = Path(f"/proc/{todo.pop()}")
        args = (proc / "cmdline").read_bytes().split(b"\0")
        if args and Path(args[0].decode()).name == "java":
            return " ".join(a.decode() for a in args)
        for task in (proc / "task").iterdir():
            todo += [int(c) for c in (task / "children").read_text().split()]
    raise AssertionError(f"no java process below {pid}")


def test_heap_and_start_timeout_of_the_metastore_and_trino(tmp_path: Path) -> None:
    metastore = MetastoreConfig(port=free_port(), start_timeout=0.5)
    settings = Settings(home=tmp_path / "home", catalog=CatalogConfig(type="hive"),
                        metastore=metastore,
                        trino=TrinoConfig(port=free_port(), start_timeout=1.0, heap="1G"))
    with pytest.raises(IcetideError, match=r"metastore\.start_timeout bounds its start"):
        ensure_metastore(settings)  # a JVM does not start in 0.5 s
    assert running(settings) is None  # the slow start was stopped
    settings = settings.model_copy(update={"metastore": metastore.model_copy(
        update={"start_timeout": 120.0, "heap": "320m"})})
    state = ensure_metastore(settings)
    try:
        assert "-Xmx320m" in _java_below(state.pid)
        with pytest.raises(IcetideError, match=r"trino\.start_timeout bounds its start"):
            trino.ensure_trino(settings, install=False)
        assert trino.running(settings) is None
        jvm = (TrinoPaths.of(settings).etc / "jvm.config").read_text().split()
        assert "-Xmx1G" in jvm
    finally:
        trino.stop_trino(settings)
        stop_metastore(settings)
