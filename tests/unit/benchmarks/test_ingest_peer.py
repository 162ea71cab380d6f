"""The ingest benchmark's peer keeps the clicks icetide keeps and builds the same columns."""

from __future__ import annotations

import msgspec
import pytest
from benchmarks.ingest.peer import _DECODE, _PRODUCTS, ARROW_SCHEMA, _columns

from icetide.devkit.gen.clicks import ClickGenerator


def test_generated_clicks_decode_and_become_the_table_columns() -> None:
    values = ClickGenerator(seed=5).batch(50, now_ms=1_700_000_000_000)
    table = _columns([_DECODE(v) for v in values])
    assert table.schema == ARROW_SCHEMA
    assert table.num_rows == 50
    assert set(table.column("dt").to_pylist()) == {"20231114"}
    names = dict(zip(table.column("productId").to_pylist(), table.column("name").to_pylist(),
                     strict=True))
    assert names == {pid: _PRODUCTS.get(pid, (None, None))[0] for pid in names}
    assert any(names.values()) and None in names.values()  # known and unknown products


@pytest.mark.parametrize("value", [
    b'{"uid":"u","productId":"1","updateTime":1,"expendTime":"abc","webpageId":1}',
    b'{"productId":"1","updateTime":1,"expendTime":1,"webpageId":1}',
    b'{"uid":"u","productId":"1","updateTime":1,"expendTime":2147483648,"webpageId":1}',
    b'{"uid":"u","productId":"1","updateTime"',
])
def test_malformed_clicks_are_refused(value: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        _DECODE(value)
