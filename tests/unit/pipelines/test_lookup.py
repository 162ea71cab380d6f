"""``dp.lookup_join``'s request: keys, columns and the kind of join, checked up front."""

from __future__ import annotations

import pytest

from icetide.errors import PipelineError
from icetide.pipelines.lookup import LookupSpec, _spec


def test_keys_columns_and_how_are_read_as_given() -> None:
    assert _spec("productId", None, "left") == LookupSpec(("productId",))
    assert _spec(["shop", "id"], "name", "inner") == LookupSpec(("shop", "id"), ("name",),
                                                                 "inner")


@pytest.mark.parametrize(("on", "how", "match"), [
    ([], "left", "must name the key"), ("", "left", "must name the key"),
    ("id", "right", "how='right' is not a lookup"), ("id", "full", "use 'left'"),
])
def test_a_bad_request_names_the_value_and_the_fix(on: object, how: str, match: str) -> None:
    with pytest.raises(PipelineError, match=match):
        _spec(on, None, how)  # type: ignore[arg-type]


def test_the_dimension_columns_are_the_keys_then_the_wanted_ones() -> None:
    spec = LookupSpec(("id",), ("name", "id"))
    assert spec.dimension_columns(["name", "price", "id"]) == ["id", "name"]
    assert LookupSpec(("id",)).dimension_columns(["name", "id"]) == ["id", "name"]
    with pytest.raises(PipelineError, match=r"no column price, level .*has id, name"):
        LookupSpec(("id",), ("price", "level")).dimension_columns(["id", "name"])
