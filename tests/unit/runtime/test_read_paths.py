"""JVM-free read helpers: Hadoop warehouse layout, identifiers, DuckDB extensions."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.errors import ConfigError, TableError
from icetide.query.catalog_info import parse_identifier
from icetide.query.duckdb_path import (
    connect,
    extension_file,
    local_metadata_path,
    referenced_tables,
    table_refs,
)
from icetide.runtime.hadoop_tables import HadoopDirCatalog, current_metadata_file, local_path


def _table(
    root: Path, *parts: str, versions: tuple[int, ...] = (1,), hint: int | None = None
) -> Path:
    meta = root.joinpath(*parts, "metadata")
    meta.mkdir(parents=True)
    for v in versions:
        (meta / f"v{v}.metadata.json").write_text("{}")
    if hint is not None:
        (meta / "version-hint.text").write_text(f"{hint}\n")
    return meta.parent


def test_current_metadata_prefers_the_version_hint(tmp_path: Path) -> None:
    table = _table(tmp_path, "db", "t", versions=(1, 2, 10), hint=2)
    assert current_metadata_file(table) == table / "metadata" / "v2.metadata.json"
    (table / "metadata" / "version-hint.text").write_text("garbage")
    assert current_metadata_file(table) == table / "metadata" / "v10.metadata.json"
    assert current_metadata_file(tmp_path / "db") is None


def test_hadoop_dir_catalog_lists_namespaces_and_tables(tmp_path: Path) -> None:
    _table(tmp_path, "db", "a")
    _table(tmp_path, "db", "b")
    _table(tmp_path, "db", "nested", "c")
    (tmp_path / "db" / "_tmp").mkdir()
    (tmp_path / "empty").mkdir()
    catalog = HadoopDirCatalog("lake", f"file://{tmp_path}")
    assert catalog.list_namespaces() == [("db",), ("empty",)]
    assert catalog.list_namespaces("db") == [("db", "nested")]
    assert catalog.list_tables("db") == [("db", "a"), ("db", "b")]
    assert catalog.list_tables(("db", "nested")) == [("db", "nested", "c")]
    with pytest.raises(TableError, match=r"'db.zzz' does not exist .*`icetide tables`"):
        catalog.load_table("db.zzz")


def test_local_path_refuses_object_stores() -> None:
    assert local_path("/x/y") == Path("/x/y")
    assert local_path("file:///x/a%20b") == Path("/x/a b")
    with pytest.raises(ConfigError, match=r"'s3://b/wh' is not on the local filesystem"):
        local_path("s3://b/wh")


def test_parse_identifier() -> None:
    assert parse_identifier("db.t", "lake") == ("db", "t")
    assert parse_identifier("lake.db.t", "lake") == ("db", "t")
    assert parse_identifier("`db`.`t`", "lake") == ("db", "t")
    with pytest.raises(TableError, match=r"'t' is not namespace-qualified"):
        parse_identifier("t", "lake")


def test_duckdb_extensions_load_offline() -> None:
    assert extension_file("iceberg").name == "iceberg.duckdb_extension"
    con = connect()
    loaded = con.execute(
        "SELECT extension_name FROM duckdb_extensions() WHERE loaded ORDER BY 1"
    ).fetchall()
    assert {"avro", "iceberg"} <= {r[0] for r in loaded}


def test_table_refs_are_the_tables_a_query_reads() -> None:
    query = ('WITH recent AS (SELECT * FROM dws.Views) '
             'SELECT c.uid, count(*) FROM lake.ods_behavior.ClickEvent c '
             'JOIN "dim_db"."products" p ON c.productId = p.productId JOIN recent r ON true '
             'JOIN (SELECT * FROM users) u ON true')
    assert table_refs(query) == {("ods_behavior", "clickevent"), ("dim_db", "products"),
                                 ("dws", "views"), ("users",)}
    assert table_refs("select 1.5, count(*) from t") == {("t",)}
    assert table_refs("select * from range(3) r") == set()  # a table function
    # what sqlglot cannot parse: every name in it, for DuckDB to judge
    assert table_refs("select * from ((( db.clicks") == {("db",), ("clicks",)}


def test_referenced_tables_and_paths() -> None:
    tables = [("db", "clicks"), ("db", "users"), ("ops", "click")]
    assert referenced_tables("select * from db.Clicks c join users u", tables) == [
        ("db", "clicks"), ("db", "users"),
    ]
    assert local_metadata_path("file:/w/t/metadata/v1.metadata.json") == (
        "/w/t/metadata/v1.metadata.json"
    )
    assert local_metadata_path("s3://b/v1.metadata.json") == "s3://b/v1.metadata.json"
