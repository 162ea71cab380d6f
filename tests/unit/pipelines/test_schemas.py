from __future__ import annotations

import pytest

from icetide.errors import PipelineError
from icetide.pipelines.schemas import (
    compare_schemas,
    has_column,
    normalize_type,
    parse_ddl,
)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("INTEGER", "int"),
        ("Long", "bigint"),
        ("DECIMAL", "decimal(10,0)"),
        ("numeric(12, 2)", "decimal(12,2)"),
        ("VARCHAR(20)", "string"),
        ("ARRAY<STRUCT<a: INTEGER, b: LONG>>", "array<struct<a:int,b:bigint>>"),
        ("map<string, bool>", "map<string,boolean>"),
        ("timestamp", "timestamp"),
        # a struct's field names are names, not types to spell out
        ("STRUCT<long: LONG, text: TEXT, decimal: DECIMAL>",
         "struct<long:bigint,text:string,decimal:decimal(10,0)>"),
        ("void", "void"),  # Spark's NullType, which sqlglot does not read
    ],
)
def test_normalize_type(raw: str, normal: str) -> None:
    assert normalize_type(raw) == normal


def test_parse_ddl_reads_past_quotes_nesting_and_comments() -> None:
    ddl = ("a INT, b STRUCT<x: INT, y: MAP<STRING, ARRAY<DECIMAL(10, 2)>>>, "
           "c STRING COMMENT 'p, q', `d, e` DECIMAL(10, 2) -- a comment, with a comma\n"
           ", f /* g INT, */ TIMESTAMP NOT NULL, `h``i` DATE")
    assert parse_ddl(ddl) == {
        "a": "int", "b": "struct<x:int,y:map<string,array<decimal(10,2)>>>", "c": "string",
        "d, e": "decimal(10,2)", "f": "timestamp", "h`i": "date"}


def test_parse_ddl() -> None:
    ddl = ("uid BIGINT NOT NULL, `odd name` STRING COMMENT 'x, y', "
           "s STRUCT<comment: STRING, n: INT> NOT NULL, price DECIMAL(10, 2), t: TIMESTAMP")
    assert parse_ddl(ddl) == {
        "uid": "bigint", "odd name": "string", "s": "struct<comment:string,n:int>",
        "price": "decimal(10,2)", "t": "timestamp",
    }


@pytest.mark.parametrize(
    ("ddl", "message"),
    [("uid", "is not 'name TYPE'"), ("a INT, A STRING", "twice"), ("", "no columns"),
     ("1a INT", "is not 'name TYPE'"), ("a INT, b NOSUCHTYPE, c INT", "near 'b'"),
     ("a INT>), (b INT", "is not 'name TYPE'"), ("a STRING COMMENT 'x", "is not 'name TYPE'")],
)
def test_parse_ddl_errors(ddl: str, message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        parse_ddl(ddl)


def test_compare_schemas() -> None:
    declared = {"uid": "BIGINT", "eventTime": "TIMESTAMP", "productId": "INT"}
    produced = {"UID": "long", "productId": "bigint", "extra": "string"}
    diff = compare_schemas(declared, produced)
    assert diff.missing == ("eventTime",)
    assert diff.extra == ("extra",)
    assert diff.mismatched == (("productId", "int", "bigint"),)
    assert not diff.ok
    assert diff.describe() == [
        "column eventTime is declared but the query does not produce it",
        "column extra is produced but not declared (add it to the schema)",
        "column productId is declared int but the query produces bigint (cast it)",
    ]
    assert compare_schemas({"a": "integer"}, {"A": "int"}).ok


def test_has_column() -> None:
    assert has_column({"User": "struct<id:int>"}, "user.id")
    assert not has_column({"a": "int"}, "b")
