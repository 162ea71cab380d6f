"""CREATE TABLE generation with quoted identifiers."""

from __future__ import annotations

import pytest

from icetide.errors import TableError
from icetide.pipelines.partitioning import parse_partition_field
from icetide.tables.ddl import create_table_sql, sort_order_text, write_order_sql


def test_create_table_sql_quotes_everything() -> None:
    sql = create_table_sql(
        "lake.ods.click event", [("uid", "string"), ("odd`col", "int")],
        partition_sql=[parse_partition_field("days(eventTime)").to_sql()],
        properties={"format-version": "2"}, comment="it's",
    )
    assert "`lake`.`ods`.`click event`" in sql
    assert "`odd``col` int" in sql
    assert "PARTITIONED BY (days(`eventTime`))" in sql
    assert "COMMENT 'it\\'s'" in sql
    assert "TBLPROPERTIES ('format-version'='2')" in sql


def test_create_table_needs_columns() -> None:
    with pytest.raises(TableError, match="no columns"):
        create_table_sql("lake.a.b", [])


def test_cluster_by_is_a_local_write_order() -> None:
    assert write_order_sql("lake.db.t", ["k", "my col"]) == (
        "ALTER TABLE `lake`.`db`.`t` WRITE LOCALLY ORDERED BY `k`, `my col`")
    assert sort_order_text(["k", "id"]) == "k ASC NULLS FIRST, id ASC NULLS FIRST"
