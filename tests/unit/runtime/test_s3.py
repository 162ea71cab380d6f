"""What the s3 settings become for each reader, and what happens without credentials."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icetide.config import CatalogConfig, S3Config, Settings, load_settings
from icetide.errors import ConfigError, RuntimeSetupError
from icetide.runtime import s3
from icetide.runtime.catalogs import catalog_properties


def _settings(tmp_path: Path, **s3_config: object) -> Settings:
    return Settings(home=tmp_path, catalog=CatalogConfig(warehouse="s3://lake/wh"),
                    s3=S3Config.model_validate(s3_config))


def test_a_local_warehouse_gets_no_s3_properties(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    assert not s3.uses_s3(settings)
    assert s3.iceberg_properties(settings) == {}
    assert "io-impl" not in catalog_properties(settings)


def test_every_reader_gets_the_endpoint_region_and_addressing(tmp_path: Path) -> None:
    settings = _settings(tmp_path, endpoint="http://127.0.0.1:8333/", path_style_access=True)
    props = catalog_properties(settings)
    assert props["io-impl"] == s3.S3_FILE_IO
    assert props["s3.endpoint"] == "http://127.0.0.1:8333"
    assert props["s3.path-style-access"] == "true"
    assert props["s3.force-virtual-addressing"] == "false"  # pyiceberg's pyarrow FileIO
    assert props["client.region"] == "us-east-1"
    hadoop = s3.hadoop_properties(settings)
    assert hadoop["fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert hadoop["fs.s3a.endpoint"] == "http://127.0.0.1:8333"
    assert hadoop["fs.s3a.connection.ssl.enabled"] == "false"
    assert not any("key" in k or "secret" in k for k in {**props, **hadoop})


def test_a_bad_endpoint_is_refused_with_an_example() -> None:
    with pytest.raises(ConfigError, match=r"s3\.endpoint 'localhost:8333' .* 'http://"):
        load_settings(environ={"ICETIDE_S3__ENDPOINT": "localhost:8333"})


def test_a_hadoop_catalog_cannot_keep_its_tables_on_s3(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(type="hadoop",
                                                             warehouse="s3://lake/wh"))
    with pytest.raises(ConfigError, match=r"atomically; set catalog\.type to hive"):
        catalog_properties(settings)


def test_without_credentials_the_store_is_never_asked(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*s3.KEY_VARS, "AWS_PROFILE", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.delenv(var, raising=False)
    settings = _settings(tmp_path, endpoint="http://127.0.0.1:9")
    with pytest.raises(RuntimeSetupError, match=r"no S3 credentials .* http://127\.0\.0\.1:9: "
                                                r"set AWS_ACCESS_KEY_ID and AWS_SECRET"):
        s3.check_access(settings)
    assert os.environ["AWS_EC2_METADATA_DISABLED"] == "true"
