"""The local Trino's files: the lake's catalog file, loopback only, a modest heap."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import CatalogConfig, MetastoreConfig, Settings, TrinoConfig
from icetide.errors import ConfigError
from icetide.runtime.trino.site import (
    TrinoPaths,
    catalog_properties,
    check_host,
    render,
    write_etc,
)


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(home=tmp_path, metastore=MetastoreConfig(port=19083),
                    trino=TrinoConfig(port=18080), **kw)  # type: ignore[arg-type]


def test_the_embedded_lake_is_the_seeds_catalog_file_on_local_files(tmp_path: Path) -> None:
    assert catalog_properties(_settings(tmp_path)) == {
        "connector.name": "iceberg", "iceberg.catalog.type": "hive_metastore",
        "hive.metastore.uri": "thrift://127.0.0.1:19083",
        "fs.native-local.enabled": "true", "local.location": "/",
        "iceberg.security": "read_only"}


def test_other_catalogs(tmp_path: Path) -> None:
    hms = _settings(tmp_path, catalog=CatalogConfig(uri="thrift://hms:9083",
                                                    warehouse="s3://bucket/wh"))
    props = catalog_properties(hms, read_only=False)
    assert props["hive.metastore.uri"] == "thrift://hms:9083"
    assert props["fs.native-s3.enabled"] == "true" and "iceberg.security" not in props
    rest = _settings(tmp_path, catalog=CatalogConfig(type="rest", uri="http://rest:8181"))
    assert catalog_properties(rest)["iceberg.rest-catalog.uri"] == "http://rest:8181"
    with pytest.raises(ConfigError, match="icetide catalog migrate"):
        catalog_properties(_settings(tmp_path, catalog=CatalogConfig(type="hadoop")))


def test_only_loopback() -> None:
    check_host("127.0.0.1")
    check_host("localhost")
    with pytest.raises(ConfigError, match=r"'0\.0\.0\.0' is not a loopback address"):
        check_host("0.0.0.0")


def test_write_etc(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    paths = TrinoPaths.of(settings)
    write_etc(settings, paths)
    config = (paths.etc / "config.properties").read_text()
    assert "http-server.http.port=18080\n" in config
    assert "discovery.uri=http://127.0.0.1:18080\n" in config
    node = (paths.etc / "node.properties").read_text()
    assert "node.bind-ip=127.0.0.1\n" in node and "node.internal-address=127.0.0.1\n" in node
    assert "-Xmx2G\n" in (paths.etc / "jvm.config").read_text()
    catalog = (paths.etc / "catalog" / "iceberg.properties").read_text()
    assert catalog.startswith("# written by icetide trino start\n")
    assert "hive.metastore.uri=thrift://127.0.0.1:19083\n" in catalog


def test_render() -> None:
    assert render({"a": "1", "b.c": "x"}, "one\ntwo") == "# one\n# two\na=1\nb.c=x\n"


def test_the_catalog_name_is_an_identifier() -> None:
    with pytest.raises(ValueError, match=r"trino\.catalog '\.\./x' must be a lower-case"):
        TrinoConfig(catalog="../x")
    assert TrinoConfig(catalog="lake_1").catalog == "lake_1"
