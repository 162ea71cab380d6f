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
    qualified_names,
    referenced_tables,
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


def test_qualified_names_are_the_fast_path_candidates() -> None:
    query = ('SELECT c.uid, count(*) FROM lake.ods_behavior.ClickEvent c '
             'JOIN "dim_db"."products" p ON c.productId = p.productId')
    assert qualified_names(query) == {
        ("lake", "ods_behavior"), ("ods_behavior", "clickevent"), ("dim_db", "products"),
        ("c", "uid"), ("c", "productid"), ("p", "productid")}
    assert qualified_names("select 1.5, count(*) from t") == {("1", "5")}


def test_referenced_tables_and_paths() -> None:
    tables = [("db", "clicks"), ("db", "users"), ("ops", "click")]
    assert referenced_tables("select * from db.Clicks c join users u", tables) == [
        ("db", "clicks"), ("db", "users"),
    ]
    assert local_metadata_path("file:/w/t/metadata/v1.metadata.json") == (
        "/w/t/metadata/v1.metadata.json"
    )
    assert local_metadata_path("s3://b/v1.metadata.json") == "s3://b/v1.metadata.json"
