"""The reader-task decoder + finish_decoded agree with Spark's from_json path, row by row.

Every record goes through both paths on a real local Spark: the old one
(``decode_json``: ``from_json`` on every row) and the new one (``JsonDecoder`` in a
``mapInArrow`` task, then ``finish_decoded`` for the deferred rows). Valid rows, their
values, dead letters and their reasons must be identical.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string
from test_kafka_decode import CASES

from icetide.devkit.gen.clicks import CLICK_REQUIRED, CLICK_SCHEMA_DDL
from icetide.sources.kafka.decode import decode_json, split_decoded
from icetide.sources.kafka.layout import RAW_SCHEMA_DDL
from icetide.sources.kafka.task_decode import finish_decoded, python_decoder, reader_schema

pytestmark = pytest.mark.spark

BASE = b'"productId":"2","updateTime":5'
EDGE: list[bytes | None] = [
    b"{'uid':'1','productId':'2','updateTime':5}",  # Spark allows single quotes
    b'{"uid":"1",' + BASE + b'} trailing junk',  # Spark ignores trailing text
    b'{"uid":"1",' + BASE + b'}}',
    b'  {"uid":"1",' + BASE + b'}\n',
    b'{"uid":"a\xffb",' + BASE + b'}',  # invalid UTF-8 inside a string
    b'{"uid":"caf\\u00e9 \\"q\\" \\/",' + BASE + b'}',
    b'{"uid":"\\ud800",' + BASE + b'}',  # lone surrogate escape
    b'{"uid":1.5,' + BASE + b'}',  # float into a string field
    b'{"uid":1e20,' + BASE + b'}',
    b'{"uid":-0,' + BASE + b'}',
    b'{"uid":99999999999999999999999,' + BASE + b'}',
    b'{"uid":18446744073709551615,' + BASE + b'}',
    b'{"uid":true,' + BASE + b'}',
    b'{"uid":{"a":[1,2.50,"x"]},' + BASE + b'}',
    b'{"uid":[],' + BASE + b'}',
    b'{"uid":"1","productId":"2","updateTime":9223372036854775807}',
    b'{"uid":"1","productId":"2","updateTime":9223372036854775808}',
    b'{"uid":"1","productId":"2","updateTime":-9223372036854775808}',
    b'{"uid":"1",' + BASE + b',"expendTime":2147483647,"webpageId":-2147483648}',
    b'{"uid":"1",' + BASE + b',"expendTime":2147483648}',
    b'{"uid":"1",' + BASE + b',"expendTime":NaN}',
    b'{"uid":"1",' + BASE + b',"expendTime":1.0}',
    b'{"uid":"1",' + BASE + b',"expendTime":1e2}',
    b'{"uid":"1",' + BASE + b',"expendTime":-0}',
    b'{"uid":"1",' + BASE + b',"expendTime":null}',
    b'{"uid":"1",' + BASE + b',"expendTime":"x","expendTime":3}',  # bad earlier duplicate
    b'{"uid":"1",' + BASE + b',"expendTime":3,"expendTime":"x"}',
    b'{"uid":"1",' + BASE + b',"expendTime":"x","expendTim\\u0065":3}',
    b'{"uid":"1","uid":null,' + BASE + b'}',
    b'{"uid":null,"uid":"1",' + BASE + b'}',
    b'{"uid":"1",' + BASE + b',"expendTime" : 4}',
    b'{"uid":"1",' + BASE + b',"note":"a:b:c"}',
    b'{"uid":"1",' + BASE + b',"nested":{"uid":5,"x":{"y":1}}}',
    b'{"UID":"1",' + BASE + b'}',  # names are case-sensitive
    b'{"uid":"",' + BASE + b'}',
    b'{"uid":"1",' + BASE + b',"cookieId":"\xe4\xb8\xad\xe6\x96\x87"}',
    b'\xef\xbb\xbf{"uid":"1",' + BASE + b'}',  # byte order mark
    b'{"uid":"1",' + BASE + b',}',
    b'{"uid":"1",' + BASE + b'/* c */}',
    b'{uid:"1",' + BASE + b'}',
    b'{"uid":"1",' + BASE + b',"expendTime":01}',
    b'{"uid":"1",' + BASE + b',"expendTime":+1}',
    b'{}', b"   ", b"1", b'"x"', b"true",
    b'{"uid":"1",' + BASE + b',"expendTime":"\t"}',
    b'{"uid":"1\t2",' + BASE + b'}',  # raw control character inside a string
]


def _raw(spark: SparkSession, values: list[bytes | None]) -> DataFrame:
    ts = datetime(2024, 1, 2, 3, 4, 5)
    rows = [(None, v, "clicks", i % 3, i, ts) for i, v in enumerate(values)]
    return spark.createDataFrame(rows, RAW_SCHEMA_DDL)


def _both(spark: SparkSession, values: list[bytes | None], ddl: str,
          required: tuple[str, ...]) -> tuple[DataFrame, DataFrame]:
    schema = _parse_datatype_string(ddl)
    assert isinstance(schema, StructType)
    decoder = python_decoder(schema, required)
    assert decoder is not None
    raw = _raw(spark, values)
    frame = raw.mapInArrow(lambda it: map(decoder.decode, it), reader_schema(schema))
    return decode_json(raw, schema, required), finish_decoded(frame, schema, required)


def _rows(df: DataFrame) -> dict[int, dict[str, Any]]:
    valid, invalid = split_decoded(df)
    out = {r["_offset"]: {"valid": True, **r.asDict()} for r in valid.collect()}
    out |= {r["offset"]: {"valid": False, **r.asDict()} for r in invalid.collect()}
    return out


CLICK_ORDINARY = [b'{"uid":"%d",' % i + BASE + b',"expendTime":%d}' % i for i in range(80)]
FLAG_ORDINARY = [b'{"uid":"%d","ok":true,"n":%d}' % (i, -i) for i in range(80)]


@pytest.mark.parametrize("ddl,required,ordinary", [
    (CLICK_SCHEMA_DDL, CLICK_REQUIRED, CLICK_ORDINARY),
    ("uid string, ok boolean, n bigint", (), FLAG_ORDINARY),
], ids=["clicks", "flags"])
@pytest.mark.parametrize("lead", [False, True], ids=["odd-batch", "ordinary-batch"])
def test_same_valid_rows_values_and_reasons(spark: SparkSession, ddl: str,
                                            required: tuple[str, ...],
                                            ordinary: list[bytes | None], lead: bool) -> None:
    """An odd batch takes the dict path alone; one that starts ordinary takes msgspec
    (:mod:`icetide.sources.kafka.struct_decode`) for what it proves, the dict path for
    the rest."""
    lead_in = ordinary if lead else []
    values = lead_in + [v for v, _ in CASES] + EDGE + [
        b'{"ok":true,"n":1}', b'{"ok":"true"}', b'{"ok":1}', b'{"ok":null,"uid":false}']
    old, new = _both(spark, values, ddl, required)
    want, got = _rows(old), _rows(new)
    assert len(got) == len(values)
    for offset, row in want.items():
        assert got[offset] == row, (offset, values[offset])


def test_ordinary_rows_never_reach_from_json(spark: SparkSession) -> None:
    good = [b'{"uid":"%d",' % i + BASE + b'}' for i in range(50)]
    _, new = _both(spark, good, CLICK_SCHEMA_DDL, CLICK_REQUIRED)
    plan = new._jdf.queryExecution().executedPlan().toString()
    # the parse and the explanation both sit behind the reader's `_deferred` flag
    assert re.search(r"CASE WHEN _deferred#\d+ THEN from_json\(", plan), plan
    assert re.search(r"CASE WHEN \(NOT _deferred#\d+ OR .*\) THEN null ELSE", plan), plan
    assert new.where("_value IS NOT NULL OR _error IS NOT NULL").count() == 0
