"""Include/exclude regexes over db.table (pure)."""

from __future__ import annotations

import pytest

from icetide.errors import ConfigError, SourceError
from icetide.sources.mysql.filters import TableFilter, split_name


def test_include_and_exclude() -> None:
    f = TableFilter([r"user_db\..*", r"shop\.orders"], [r"user_db\.tmp_.*"])
    names = ["user_db.products", "user_db.user_member", "user_db.tmp_x", "shop.orders",
             "shop.order_items", "other.products"]
    assert f.select(names) == ["shop.orders", "user_db.products", "user_db.user_member"]


def test_patterns_match_the_whole_name() -> None:
    f = TableFilter([r"user_db\.prod"])
    assert not f.matches("user_db.products")
    assert f.matches("user_db.prod")


def test_system_schemas_are_never_followed() -> None:
    f = TableFilter([".*"])
    assert not f.matches("mysql.user")
    assert not f.matches("information_schema.tables")
    assert f.matches("app.t")


def test_bad_patterns_are_config_errors_naming_the_pattern() -> None:
    with pytest.raises(ConfigError, match=r"invalid exclude pattern 'user_db.\(': missing \)"):
        TableFilter([".*"], ["user_db.("])
    with pytest.raises(ConfigError, match="at least one include"):
        TableFilter([])
    with pytest.raises(ConfigError, match="lists of patterns"):
        TableFilter("user_db.x")


def test_split_name() -> None:
    assert split_name("a.b.c") == ("a", "b.c")
    with pytest.raises(SourceError, match="'products'"):
        split_name("products")
