"""The metastore's files and hive-site.xml; a non-loopback bind is refused (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import CatalogConfig, MetastoreConfig, Settings, load_settings
from icetide.errors import ConfigError
from icetide.runtime.metastore.service import embedded, ensure_metastore, metastore_uri
from icetide.runtime.metastore.site import MetastorePaths, check_host, hive_site


def test_hive_site_points_at_the_home(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(type="hive"),
                        metastore=MetastoreConfig(lock_timeout=45))
    xml = hive_site(settings, MetastorePaths.of(settings))
    assert f"databaseName={tmp_path.resolve()}/metastore/db;create=true" in xml
    assert f"<value>{tmp_path.resolve()}/warehouse</value>" in xml
    assert "<name>hive.txn.timeout</name><value>45s</value>" in xml


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_hosts_are_fine(host: str) -> None:
    check_host(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "metastore.example.com"])
def test_other_hosts_are_refused_with_the_fix(host: str, tmp_path: Path) -> None:
    settings = load_settings(None, environ={
        "ICETIDE_HOME": str(tmp_path), "ICETIDE_CATALOG__TYPE": "hive",
        "ICETIDE_METASTORE__HOST": host})
    with pytest.raises(ConfigError, match=rf"metastore.host '{host}' .*no authentication"):
        ensure_metastore(settings)


def test_embedded_means_hive_without_uri(tmp_path: Path) -> None:
    assert embedded(Settings(home=tmp_path, catalog=CatalogConfig(type="hive")))
    assert not embedded(Settings(home=tmp_path, catalog=CatalogConfig(
        type="hive", uri="thrift://hms.example.com:9083")))
    assert embedded(Settings(home=tmp_path))  # the default
    assert not embedded(Settings(home=tmp_path, catalog=CatalogConfig(type="hadoop")))
    s = Settings(home=tmp_path, catalog=CatalogConfig(type="hive"),
                 metastore=MetastoreConfig(port=19999))
    assert metastore_uri(s) == "thrift://127.0.0.1:19999"
