"""JsonDecoder: typed Arrow columns in the reader task; anything doubtful is deferred."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from icetide.sources.kafka.arrow_decode import JsonDecoder
from icetide.sources.kafka.reader import ARROW_SCHEMA

FIELDS = (("uid", "string"), ("n", "int"), ("big", "bigint"), ("ok", "boolean"))
TS = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def _raw(values: list[bytes | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_arrays([
        pa.nulls(n, pa.binary()), pa.array(values, pa.binary()), pa.array(["t"] * n),
        pa.array([i % 2 for i in range(n)], pa.int32()), pa.array(range(n), pa.int64()),
        pa.array([TS] * n, pa.timestamp("us", tz="UTC")),
    ], schema=ARROW_SCHEMA)


def _decode(values: list[bytes | None], required: tuple[str, ...] = ("uid",)) -> list[dict]:
    decoder = JsonDecoder.for_fields(FIELDS, required)
    assert decoder is not None
    out = decoder.decode(_raw(values))
    assert out.schema == decoder.arrow_schema()
    return out.to_pylist()


def test_valid_records_become_typed_columns() -> None:
    (row,) = _decode([b'{"uid":"u1","n":-3,"big":9223372036854775807,"ok":true,"x":[1]}'])
    assert row == {"uid": "u1", "n": -3, "big": 2**63 - 1, "ok": True, "_topic": "t",
                   "_partition": 0, "_offset": 0, "_kafka_ts": TS, "_value": None,
                   "_deferred": False}


def test_spark_conversions_into_string_fields() -> None:
    rows = _decode([b'{"uid":513248}', b'{"uid":false}', b'{"uid":"a","n":null}'])
    assert [(r["uid"], r["n"], r["_deferred"]) for r in rows] == [
        ("513248", None, False), ("false", None, False), ("a", None, False)]


def test_doubtful_records_are_deferred_with_their_bytes() -> None:
    values: list[bytes | None] = [
        None, b"", b"[1]", b"null", b'{"uid":"a"', b"{'uid':'a'}", b'{"uid":"a"} junk',
        b'{"uid":"a\xff"}', b'{"uid":1.5}', b'{"uid":{"a":1}}', b'{"uid":"a","n":"1"}',
        b'{"uid":"a","n":2147483648}', b'{"uid":"a","n":true}', b'{"uid":"a","n":1.0}',
        b'{"uid":"a","big":9223372036854775808}', b'{"uid":"a","ok":1}', b'{"n":1}',
        b'{"uid":null}', b'{"uid":"a","n":"x","n":1}', b'{"uid":"a","n":"x","\\u006e":1}',
    ]
    rows = _decode(values)
    for value, row in zip(values, rows, strict=True):
        assert row["_deferred"], value
        assert row["_value"] == value
        assert (row["uid"], row["n"], row["big"], row["ok"]) == (None,) * 4


def test_duplicate_screen_only_defers_real_duplicates() -> None:
    rows = _decode([
        b'{"uid":"a","note":"12:30","nested":{"uid":"b"}}',  # more colons, no duplicate
        b'{"uid" : "a", "n" : 1}',  # fewer colons than keys is fine
        b'{"uid":"a","uid":"b"}',
        b'{"uid":"a","other":1,"other":2}',  # duplicates outside the schema do not matter
    ])
    assert [r["_deferred"] for r in rows] == [False, False, True, False]
    assert [r["uid"] for r in rows] == ["a", "a", None, "a"]


def test_required_fields_and_mixed_batches() -> None:
    values = [b'{"uid":"a","n":%d}' % i for i in range(100)]
    values[7] = b'{"uid":"a","n":"seven"}'
    values[42] = b'{"n":42}'
    rows = _decode(values, required=("uid", "n"))
    assert [i for i, r in enumerate(rows) if r["_deferred"]] == [7, 42]
    assert [r["n"] for r in rows if not r["_deferred"]] == [i for i in range(100)
                                                            if i not in (7, 42)]


def test_unsupported_schemas_use_spark() -> None:
    assert JsonDecoder.for_fields([("x", "double")]) is None
    assert JsonDecoder.for_fields([("t", "timestamp"), ("uid", "string")]) is None
    assert JsonDecoder.for_fields([('we"ird', "string")]) is None
    assert JsonDecoder.for_fields([]) is None
    assert JsonDecoder.for_fields([("a.b", "string")]) is not None


ODD: list[bytes | None] = [
    None, b"", b"[1]", b"null", b"{}", b'{"uid":"a"', b'{"uid":"a"} junk', b'{"uid":"a\xff"}',
    b'{"uid":"a","x":"\xff"}', b'{"uid":"a","x":1e999}', b'{"uid":"a","x":NaN}',
    b'{"uid":"\\ud800"}', b'{"uid":1.5}', b'{"uid":513248}', b'{"uid":true}',
    b'{"uid":"a","n":"1"}',
    b'{"uid":"a","n":2147483648}', b'{"uid":"a","n":-2147483648}', b'{"uid":"a","n":true}',
    b'{"uid":"a","n":1.0}', b'{"uid":"a","big":9223372036854775808}', b'{"uid":"a","ok":1}',
    b'{"uid":null}', b'{"uid":"a","n":null}', b'{"uid":"a","n":"x","n":1}',
    b'{"uid":"a","n":1,"n":2}', b'{"uid":"a","\\u006e":1}', b'{"uid":"a:b","n":1}',
    b' {"uid":"a" , "n" : 1 } ', b'{"uid":"a","nested":{"n":"x"}}', b'\xef\xbb\xbf{"uid":"a"}',
]


def _ordinary(i: int) -> bytes:
    return b'{"uid":"u%d","n":%d,"big":%d,"ok":%s}' % (i, i, -i, b"true" if i % 2 else b"false")


def test_fast_path_gives_what_the_dict_path_gives() -> None:
    """msgspec takes the ordinary records; each odd one decodes as the dict path alone has
    it, wherever it sits in the batch."""
    decoder = JsonDecoder.for_fields(FIELDS, ("uid",))
    assert decoder is not None
    values = [_ordinary(i) for i in range(200)]
    for i, odd in enumerate(ODD):
        values.insert(3 + 5 * i, odd)
    raw = _raw(values)
    columns, defer = decoder._columns(raw.column("value"), values)
    want_columns, want_defer = decoder._dict_columns(values)
    assert defer.to_pylist() == want_defer.to_pylist()
    assert [c.to_pylist() for c in columns] == [c.to_pylist() for c in want_columns]
    assert sum(want_defer.to_pylist()) > 10  # the comparison covers deferred records
    rows = decoder.decode(raw).to_pylist()
    assert [r["uid"] for r in rows[:3]] == ["u0", "u1", "u2"]


def test_struct_path_proves_only_ordinary_records() -> None:
    from icetide.sources.kafka import struct_decode

    values = [_ordinary(1), *ODD]
    types = [pa.string(), pa.int32(), pa.int64(), pa.bool_()]
    _, slow = struct_decode.columns(FIELDS, types, pa.array(values, pa.binary()), values)
    fast = [v for v, s in zip(values, slow.to_pylist(), strict=True) if not s]
    # the only odd records msgspec may take: nothing but schema fields, typed, non-null
    assert fast == [_ordinary(1), b"{}", b'{"uid":"a","n":-2147483648}',
                    b'{"uid":"a","\\u006e":1}', b' {"uid":"a" , "n" : 1 } ']


def test_batches_of_records_with_other_keys_skip_the_fast_path() -> None:
    from icetide.sources.kafka import struct_decode

    types = [pa.string(), pa.int32(), pa.int64(), pa.bool_()]
    extra = [b'{"uid":"u","n":1,"page":"/p"}'] * 100
    ordinary = [_ordinary(i) for i in range(100)]
    assert not struct_decode.worth_trying(FIELDS, types, pa.array(extra, pa.binary()), extra)
    assert struct_decode.worth_trying(FIELDS, types, pa.array(ordinary, pa.binary()), ordinary)
    assert not struct_decode.worth_trying(FIELDS, types, pa.array([], pa.binary()), [])
    rows = _decode(extra)
    assert {(r["uid"], r["n"], r["_deferred"]) for r in rows} == {("u", 1, False)}
