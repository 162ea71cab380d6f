"""parse_json on a real local Spark: wrong types are detected, never silently nulled."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

from icetide.devkit.gen.clicks import CLICK_REQUIRED, CLICK_SCHEMA_DDL
from icetide.errors import SourceError
from icetide.sources.kafka.decode import decode_json, parse_json, split_decoded
from icetide.sources.kafka.layout import RAW_SCHEMA_DDL

pytestmark = pytest.mark.spark

GOOD = (b'{"cookieId":"abc","expendTime":3,"productId":"7","uid":"10952",'
        b'"updateTime":1700000000000,"webpageId":42}')
CASES: list[tuple[bytes | None, str | None]] = [
    (GOOD, None),
    (GOOD[:-1] + b',"extra":{"x":[1]}}', None),  # unknown fields are ignored
    (b'{"uid":"1","productId":"2","updateTime":5}', None),  # optional fields may be absent
    (b'{"uid":513248,"productId":"2","updateTime":5}', None),  # numbers are accepted as strings
    (GOOD[:40], "malformed JSON"),
    (b"", "malformed JSON"),
    (b"[1, 2]", "malformed JSON"),
    (b"null", "malformed JSON"),
    (b"\xff\xfe", "malformed JSON"),
    (None, "empty message (null value)"),
    (b'{"uid":"1","productId":"2","updateTime":5,"expendTime":"abc"}',
     "field expendTime: expected int, got string 'abc'"),
    (b'{"uid":"1","productId":"2","updateTime":"yesterday"}',
     "field updateTime: expected bigint, got string 'yesterday'"),
    (b'{"uid":"1","productId":"2","updateTime":5,"expendTime":"12"}',
     "field expendTime: expected int, got string '12'"),
    (b'{"uid":"1","productId":"2","updateTime":5,"expendTime":1.5}',
     "field expendTime: expected int, got number '1.5'"),
    (b'{"uid":"1","productId":"2","updateTime":5,"webpageId":99999999999}',
     "field webpageId: expected int, got number '99999999999'"),
    (b'{"uid":"1","productId":"2","updateTime":5,"webpageId":{"a":1}}',
     "field webpageId: expected int, got object '{\"a\":1}'"),
    (b'{"uid":"1","productId":"2","updateTime":5,"webpageId":true}',
     "field webpageId: expected int, got boolean 'true'"),
    (b'{"productId":"2","updateTime":5}', "missing required field uid"),
    (b'{"uid":null,"productId":"2","updateTime":5}', "missing required field uid"),
    (b'{"uid":"1","expendTime":"x"}',
     "field expendTime: expected int, got string 'x'; missing required field productId; "
     "missing required field updateTime"),
]


def test_valid_and_invalid_rows(spark: SparkSession) -> None:
    ts = datetime(2024, 1, 2, 3, 4, 5)
    rows = [(None, value, "clicks", i % 2, i, ts) for i, (value, _) in enumerate(CASES)]
    raw = spark.createDataFrame(rows, RAW_SCHEMA_DDL)
    schema = _parse_datatype_string(CLICK_SCHEMA_DDL)
    assert isinstance(schema, StructType)
    valid, invalid = parse_json(raw, schema, CLICK_REQUIRED)

    good = {r["_offset"]: r for r in valid.collect()}
    assert sorted(good) == [i for i, (_, err) in enumerate(CASES) if err is None]
    first = good[0]
    assert (first["cookieId"], first["expendTime"], first["uid"], first["updateTime"]) == \
        ("abc", 3, "10952", 1700000000000)
    assert (first["_topic"], first["_partition"], first["_kafka_ts"]) == ("clicks", 0, ts)
    assert good[3]["uid"] == "513248"

    bad = {r["offset"]: r for r in invalid.collect()}
    assert {i: r["error"] for i, r in bad.items()} == {
        i: err for i, (_, err) in enumerate(CASES) if err is not None}
    for i, row in bad.items():
        assert row["value"] == (None if CASES[i][0] is None else bytearray(CASES[i][0]))
        assert (row["topic"], row["partition"], row["timestamp"]) == ("clicks", i % 2, ts)


def test_parses_once_per_row(spark: SparkSession) -> None:
    raw = spark.createDataFrame([(None, GOOD, "t", 0, 0, None)], RAW_SCHEMA_DDL)
    schema = _parse_datatype_string(CLICK_SCHEMA_DDL)
    assert isinstance(schema, StructType)
    valid, _ = parse_json(raw, schema, CLICK_REQUIRED)
    plan = valid._jdf.queryExecution().executedPlan().toString()
    assert plan.count("from_json(") == 1, plan


def test_bad_arguments(spark: SparkSession) -> None:
    raw = spark.createDataFrame([], RAW_SCHEMA_DDL)
    schema = _parse_datatype_string("a int, _offset int")
    assert isinstance(schema, StructType)
    with pytest.raises(SourceError, match="required fields nope are not in the schema"):
        parse_json(raw, schema, ["nope"])
    with pytest.raises(SourceError, match="_offset"):
        parse_json(raw, schema)


def test_decode_once_then_split(spark: SparkSession) -> None:
    rows = [(None, value, "t", 0, i, None) for i, (value, _) in enumerate(CASES)]
    raw = spark.createDataFrame(rows, RAW_SCHEMA_DDL)
    schema = _parse_datatype_string(CLICK_SCHEMA_DDL)
    assert isinstance(schema, StructType)
    decoded = decode_json(raw, schema, CLICK_REQUIRED).cache()
    assert decoded.count() == len(CASES)
    valid, invalid = split_decoded(decoded)
    want_valid, want_invalid = parse_json(raw, schema, CLICK_REQUIRED)
    def by_offset(rows: list[Row], key: str) -> dict[int, Row]:
        return {r[key]: r for r in rows}

    assert by_offset(valid.collect(), "_offset") == by_offset(want_valid.collect(), "_offset")
    assert by_offset(invalid.collect(), "offset") == by_offset(want_invalid.collect(), "offset")
    decoded.unpersist()
