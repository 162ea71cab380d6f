"""The DuckDB read path names a missing table, not its existing namespace: with icetide's
catalog service (the default catalog), a table that does not load left DuckDB without a
view in its namespace, so it said ``schema "ods" does not exist``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from icetide.app.context import Context
from icetide.config import CatalogConfig, MetastoreConfig, Settings
from icetide.devkit.embedded.process import free_port
from icetide.errors import TableError
from icetide.runtime.metastore.service import ensure_metastore, stop_metastore


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Context]:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(name="lake", type="hive"),
                        metastore=MetastoreConfig(port=free_port()))
    ensure_metastore(settings)
    try:
        ctx = Context(settings)
        ctx.catalog.create_namespace("qd_ods")
        table = ctx.catalog.create_table(("qd_ods", "clicks"),
                                         pa.schema([pa.field("id", pa.int64())]))
        table.append(pa.table({"id": [1, 2, 3]}))
        yield ctx
    finally:
        stop_metastore(settings)


def test_a_missing_table_is_named_with_what_its_namespace_has(lake: Context) -> None:
    with pytest.raises(TableError) as refused:
        lake.sql("SELECT count(*) FROM qd_ods.clickz", engine="duckdb")
    assert str(refused.value) == ("no table qd_ods.clickz in catalog lake; namespace qd_ods "
                                  "has: clicks (`icetide tables` lists every table)")
    # a namespace that does not exist: DuckDB's own message is right
    with pytest.raises(duckdb.CatalogException, match='schema "qd_nowhere" does not exist'):
        lake.sql("SELECT count(*) FROM qd_nowhere.clicks", engine="duckdb")
    assert lake.sql("SELECT count(*) FROM qd_ods.clicks", engine="duckdb").rows == [(3,)]
