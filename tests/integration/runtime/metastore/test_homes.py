"""Several homes on one machine: each home's service gets its own port, and a service
whose home is gone (or that nobody uses for ``metastore.idle_timeout``) stops by itself.

Issue 44: a script that ran icetide commands each with a temporary home left a service on
9083 behind, and every later home failed with "127.0.0.1:9083 is taken".
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyiceberg.catalog import load_catalog

from icetide.app.catalog import describe_service
from icetide.cli.catalog_cmd import catalog
from icetide.config import CatalogConfig, MetastoreConfig, Settings
from icetide.devkit.embedded.process import free_port
from icetide.runtime.catalogs import catalog_properties
from icetide.runtime.local_server import pid_alive, terminate
from icetide.runtime.metastore.service import (
    ServiceState,
    ensure_metastore,
    metastore_uri,
    stop_metastore,
)

DEFAULT_PORT = 9083


@pytest.fixture
def port_9083_taken() -> Iterator[None]:
    """Another program holds 9083 (this test, unless one already does)."""
    try:
        holder = socket.create_server(("127.0.0.1", DEFAULT_PORT))
    except OSError:  # taken already: the situation the test wants
        yield
        return
    with holder:
        yield


def _unset_port(home: Path) -> Settings:
    """A home whose metastore.port is left unset (the default 9083, not explicit)."""
    return Settings(home=home, catalog=CatalogConfig(type="hive"))


def _gone(state: ServiceState, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(state.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not pid_alive(state.pid)


def test_two_homes_at_once_take_free_ports_and_say_which(
        tmp_path: Path, port_9083_taken: None) -> None:
    a, b = _unset_port(tmp_path / "a"), _unset_port(tmp_path / "b")
    sa, sb = ensure_metastore(a), ensure_metastore(b)
    assert len({sa.port, sb.port, DEFAULT_PORT}) == 3
    # every reader takes the recorded URI: engines' conf, the catalog service ...
    assert (metastore_uri(a), catalog_properties(a)["uri"], describe_service(a).uri) == \
        (sa.uri, sa.uri, sa.uri)
    assert metastore_uri(b) == sb.uri
    # ... and `icetide catalog status` prints it in the pyiceberg/Trino instructions
    config = tmp_path / "b.yaml"
    config.write_text(f"home: {tmp_path / 'b'}\n")
    shown = CliRunner().invoke(catalog, ["status", "--config", str(config)],
                               env={"ICETIDE_METASTORE__PORT": None, "ICETIDE_CONFIG": None})
    assert shown.exit_code == 0, shown.output
    assert f"uri='{sb.uri}'" in shown.output and f"hive.metastore.uri={sb.uri}" in shown.output
    # two catalogs, not one: a namespace made through A's URI is not in B
    load_catalog("a", type="hive", uri=sa.uri).create_namespace("only_a")
    assert ("only_a",) in load_catalog("a", type="hive", uri=sa.uri).list_namespaces()
    assert ("only_a",) not in load_catalog("b", type="hive", uri=sb.uri).list_namespaces()
    # restarted while 9083 is still taken, a service takes its last port again
    stop_metastore(a)
    assert ensure_metastore(a).port == sa.port


def test_an_explicit_port_that_is_taken_is_refused(tmp_path: Path,
                                                   port_9083_taken: None) -> None:
    from icetide.errors import RuntimeSetupError

    settings = Settings(home=tmp_path, catalog=CatalogConfig(type="hive"),
                        metastore=MetastoreConfig(port=DEFAULT_PORT))
    with pytest.raises(RuntimeSetupError, match="9083 is taken by another program"):
        ensure_metastore(settings)


def test_deleting_a_home_stops_its_service(tmp_path: Path) -> None:
    home = tmp_path / "script-home"
    settings = Settings(home=home, catalog=CatalogConfig(type="hive"),
                        metastore=MetastoreConfig(port=free_port()))
    state = ensure_metastore(settings)
    shutil.rmtree(home)
    try:
        assert _gone(state, timeout=30), "the service outlived its home"
    finally:  # no state file is left to find it by: never leave it behind
        if pid_alive(state.pid):
            terminate(state.pid)
    with socket.socket() as probe:  # and its port is free for the next home
        probe.bind(("127.0.0.1", state.port))


def test_idle_timeout_stops_a_service_nobody_uses(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(type="hive"),
                        metastore=MetastoreConfig(port=free_port(), idle_timeout="3s"))
    state = ensure_metastore(settings)
    with socket.create_connection((state.host, state.port)):  # a client holds a connection
        time.sleep(8)
        assert pid_alive(state.pid), "stopped while a client was connected"
    assert _gone(state, timeout=20), "still running after idle_timeout without clients"
