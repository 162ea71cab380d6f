"""``trino.user`` and ``trino.catalog`` are who queries and which catalog (docs/options.md)."""

from __future__ import annotations

from pathlib import Path

from icetide.config import Settings, TrinoConfig
from icetide.query.trino_sql import connect


def test_user_and_catalog_of_the_connection(tmp_path: Path) -> None:
    cfg = TrinoConfig(uri="https://trino:8443", user="analyst", catalog="lakehouse")
    conn = connect(Settings(home=tmp_path, trino=cfg))
    assert (conn.user, conn.catalog) == ("analyst", "lakehouse")
