"""Pure checks of the CDC declarations, source config and schema DDL (no JVM, no server)."""

from __future__ import annotations

import pytest

from icetide.cdc.apply import is_resnapshot, resnapshot_position
from icetide.cdc.evolution import AddColumn, DropColumn, RenameColumn, WidenColumn
from icetide.cdc.refs import CdcRef, binlog
from icetide.cdc.schema_sync import action_sql, renames_of
from icetide.config import Settings
from icetide.errors import ConfigError, PipelineError, SourceError
from icetide.sources.debezium.arrow import output_schema
from icetide.sources.debezium.source import DebeziumConfig, columns_from
from icetide.sources.mysql import binlog as mysql_binlog
from icetide.sources.mysql.declared import MySqlDeclaration
from icetide.sources.mysql.source import MySqlSource
from icetide.sources.registry import build_source


def test_refs() -> None:
    assert mysql_binlog is binlog
    ref = binlog("shop", table="user_db.products")
    assert ref.patterns == ((r"user_db\.products",), ())
    assert binlog("shop", include=["a\\..*"], into="dim").patterns == (("a\\..*",), ())
    with pytest.raises(PipelineError, match="not both"):
        CdcRef("shop", "a.b", include=("x",))
    with pytest.raises(PipelineError, match=r"database\.table"):
        binlog("shop", table="products")


def test_mysql_source_config(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    monkeypatch.setenv("SHOP_PW", "secret")
    src = build_source("shop", {"type": "mysql", "host": "h", "user": "u",
                                "password_env": "SHOP_PW", "chunk_size": 10}, settings)
    assert isinstance(src, MySqlDeclaration) and src.key == "mysql:shop"
    assert src.plan(src.initial_position()) is None  # inert: flows build their own readers
    follow = src.follow("db.t", (r"db\.t",), ())
    assert isinstance(follow, MySqlSource) and follow.key == "mysql:shop:db.t"
    assert follow.server_id != src.follow("db.u", (r"db\.u",), ()).server_id
    assert src.config.connection["password"] == "secret" and src.config.chunk_size == 10
    assert src.config.include == (".*",)
    with pytest.raises(PipelineError, match="mysql source 'shop': unknown key 'colour'"):
        build_source("shop", {"type": "mysql", "host": "h", "user": "u", "colour": 1}, settings)
    no_password = build_source("shop", {"type": "mysql", "host": "h", "user": "u",
                                        "password_env": "NOPE"}, settings)
    assert isinstance(no_password, MySqlDeclaration)  # fine until a CDC flow follows it
    with pytest.raises(SourceError, match="NOPE"):
        no_password.follow("db.t", (r"db\.t",), ())
    with pytest.raises(PipelineError, match=r"'password' must not be written.*password_env"):
        build_source("shop", {"type": "mysql", "host": "h", "user": "u", "password": "pw"},
                     settings)
    with pytest.raises(PipelineError, match=r"server_id 7 is not applied: every CDC flow"):
        build_source("shop", {"type": "mysql", "host": "h", "user": "u", "server_id": 7},
                     settings)
    with pytest.raises(PipelineError, match="drop_policy"):
        build_source("shop", {"type": "mysql", "host": "h", "user": "u",
                              "drop_policy": "maybe"}, settings)
    with pytest.raises(ConfigError, match="pattern"):
        build_source("shop", {"type": "mysql", "host": "h", "user": "u", "include": ["("]},
                     settings)


def test_debezium_config() -> None:
    cols = columns_from("d", {"id": "INT", "price": "decimal(10, 4)"})
    assert cols == (("id", "int"), ("price", "decimal(10,4)"))
    DebeziumConfig("d", "inv.t", cols, ("id",))
    with pytest.raises(SourceError, match="primary_key"):
        DebeziumConfig("d", "inv.t", cols, ("nope",))
    with pytest.raises(SourceError, match="columns"):
        columns_from("d", ["id"])
    decoded = output_schema(cols).names  # the rows the decoder yields inside the tasks
    assert decoded[:2] == ["id", "price"] and {"_op", "_pos", "_ts", "_error"} <= set(decoded)


def test_schema_ddl() -> None:
    t = "lake.db.t"
    assert action_sql(t, AddColumn("c", "string")) == [
        "ALTER TABLE `lake`.`db`.`t` ADD COLUMN `c` string"]
    assert action_sql(t, RenameColumn("a", "b"), prefix="after.") == [
        "ALTER TABLE `lake`.`db`.`t` RENAME COLUMN `after`.`a` TO `b`"]
    assert action_sql(t, WidenColumn("n", "int", "bigint")) == [
        "ALTER TABLE `lake`.`db`.`t` ALTER COLUMN `n` TYPE bigint"]
    assert action_sql(t, DropColumn("x", "keep")) == []
    info = {"ddl": [{"tables": ["s.t"], "query": "ALTER TABLE t RENAME COLUMN a TO b",
                     "renames": {"a": "b"}}],  # the source parsed its DDL
            "schema_changes": {"s.t": [{"op": "rename", "old": "b", "new": "c"}]}}
    assert renames_of("s.t", info) == {"a": "c"}


def test_resnapshot_positions_are_unique() -> None:
    a, b = resnapshot_position(1), resnapshot_position(2)
    assert is_resnapshot(a) and a != b and not is_resnapshot({"phase": "binlog"})
