"""Which port a home's service takes, and the one URI every reader builds (no JVM)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from icetide.config import CatalogConfig, MetastoreConfig, Settings, load_settings
from icetide.errors import ConfigError
from icetide.runtime.catalogs import catalog_properties
from icetide.runtime.metastore.service import (
    configured_uri,
    fallback_ports,
    metastore_uri,
    port_is_set,
)
from icetide.runtime.metastore.site import MetastorePaths


def _settings(home: Path, **metastore: object) -> Settings:
    return Settings(home=home, catalog=CatalogConfig(type="hive"),
                    metastore=MetastoreConfig.model_validate(metastore))


def test_only_a_port_that_was_set_is_fixed(tmp_path: Path) -> None:
    env = {"ICETIDE_HOME": str(tmp_path)}
    assert not port_is_set(load_settings(None, environ=env))
    pinned = load_settings(None, environ={**env, "ICETIDE_METASTORE__PORT": "9083"})
    assert port_is_set(pinned) and pinned.metastore.port == 9083
    cfg = tmp_path / "icetide.yaml"
    cfg.write_text("metastore:\n  port: 19083\n")
    assert port_is_set(load_settings(cfg, environ=env))


def test_fallback_ports(tmp_path: Path) -> None:
    free = _settings(tmp_path)
    paths = MetastorePaths.of(free)
    assert fallback_ports(free, paths) == (0,)  # never ran: any free port
    paths.root.mkdir(parents=True)
    paths.last_port.write_text("41234\n")
    assert fallback_ports(free, paths) == (41234, 0)  # the port it had, else any
    assert fallback_ports(_settings(tmp_path, port=19083), paths) == ()  # set: that or none


@pytest.mark.parametrize(("value", "seconds"), [("30m", 1800.0), (90, 90.0), (None, None),
                                                ("null", None)])
def test_idle_timeout(value: object, seconds: float | None, tmp_path: Path) -> None:
    assert _settings(tmp_path, idle_timeout=value).metastore.idle_timeout == seconds


def test_idle_timeout_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ICETIDE_METASTORE__IDLE_TIMEOUT"):
        load_settings(None, environ={"ICETIDE_HOME": str(tmp_path),
                                     "ICETIDE_METASTORE__IDLE_TIMEOUT": "soon"})


def test_every_reader_takes_the_recorded_uri(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert metastore_uri(settings) == configured_uri(settings) == "thrift://127.0.0.1:9083"
    paths = MetastorePaths.of(settings)
    paths.root.mkdir(parents=True)
    # a running service that took port 41234 (a sleeping process stands in for it)
    service = subprocess.Popen(["sleep", "60"])
    try:
        paths.state.write_text(json.dumps({"pid": service.pid, "host": "127.0.0.1",
                                           "port": 41234}))
        assert metastore_uri(settings) == "thrift://127.0.0.1:41234"
        assert catalog_properties(settings)["uri"] == "thrift://127.0.0.1:41234"
    finally:
        service.kill()
        service.wait()
    assert metastore_uri(settings) == "thrift://127.0.0.1:9083"  # a dead one's is not
