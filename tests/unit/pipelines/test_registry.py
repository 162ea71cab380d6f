"""pipelines.registry.set_within: a contextvar set for a block, then restored."""

from __future__ import annotations

from contextvars import ContextVar

from icetide.pipelines.registry import set_within


def test_set_within_restores_the_previous_value() -> None:
    var: ContextVar[str] = ContextVar("test_set_within", default="outer")
    with set_within(var, "inner") as value:
        assert (value, var.get()) == ("inner", "inner")
    assert var.get() == "outer"
