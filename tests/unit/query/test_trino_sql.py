"""The Trino read path without a server: values made plain, where Trino is, auth rules."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import SecretStr
from trino.types import NamedRowTuple

from icetide.config import Settings, TrinoConfig
from icetide.errors import ConfigError
from icetide.query.trino_sql import TrinoUnavailable, connect, plain, trino_uri


def test_rows_become_dicts_by_field_name() -> None:
    row = NamedRowTuple([1, [Decimal("2.5")]], ["id", "prices"], ["integer", "array"])
    assert plain({"k": [row]}) == {"k": [{"id": 1, "prices": [Decimal("2.5")]}]}


def test_without_uri_the_local_server_must_run(tmp_path: Path) -> None:
    with pytest.raises(TrinoUnavailable, match="icetide trino start"):
        trino_uri(Settings(home=tmp_path))
    configured = Settings(home=tmp_path, trino=TrinoConfig(uri="https://trino:8443/"))
    assert trino_uri(configured) == "https://trino:8443"


def test_a_password_needs_https(tmp_path: Path) -> None:
    cfg = TrinoConfig(uri="http://trino:8080", password=SecretStr("s"))
    with pytest.raises(ConfigError, match="over https only"):
        connect(Settings(home=tmp_path, trino=cfg))
    conn = connect(Settings(home=tmp_path, trino=cfg.model_copy(
        update={"uri": "https://trino:8443"})))
    assert (conn.host, conn.port, conn.http_scheme, conn.catalog, conn.user) == (
        "trino", 8443, "https", "iceberg", "icetide")
    assert type(conn.auth).__name__ == "BasicAuthentication"
