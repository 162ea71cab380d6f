"""query.result.plain_value: an engine's records and nested values as plain Python."""

from __future__ import annotations

from collections.abc import Mapping

from icetide.query.result import plain_value


class _Record(tuple[object, ...]):
    pass


def _fields(value: object) -> Mapping[str, object] | None:
    return {"a": value[0], "b": value[1]} if isinstance(value, _Record) else None


def test_records_become_dicts_at_any_depth() -> None:
    value = [_Record((1, {"k": _Record((2, [3]))})), None]
    assert plain_value(value, _fields) == [{"a": 1, "b": {"k": {"a": 2, "b": [3]}}}, None]
