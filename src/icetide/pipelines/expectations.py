"""DLT-style expectation decorators: ``@dp.expect("valid_uid", "uid IS NOT NULL")``.

They may be stacked above or below the dataset decorator. Below, they park the rules
on the function and the table decorator picks them up; above, the function is
already registered and the rules are added to its table. Rules left on a function
that never becomes a table are reported when loading finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from icetide.errors import PipelineError
from icetide.pipelines.names import SourceLocation, caller_location, located
from icetide.pipelines.registry import EXPECTATIONS_ATTR, current_registry
from icetide.pipelines.spec import Expectation, ExpectationAction

_F = TypeVar("_F", bound=Callable[..., object])


def _expectation_decorator(
    expectations: tuple[Expectation, ...], location: SourceLocation
) -> Callable[[_F], _F]:
    def apply(func: _F) -> _F:
        registry = current_registry()
        table_name = registry.table_of(func) if registry is not None else None
        with located(location):
            if registry is not None and table_name is not None:
                registry.add_expectations(table_name, expectations)  # stacked above the table
                return func
            parked: tuple[Expectation, ...] = getattr(func, EXPECTATIONS_ATTR, ())
            setattr(func, EXPECTATIONS_ATTR, expectations + parked)  # below: table reads it
            if registry is not None:
                registry.note_pending(func, location)
        return func

    return apply


def _rules(
    action: ExpectationAction, rules: Mapping[str, str], loc: SourceLocation
) -> Callable[[_F], _F]:
    with located(loc):
        if not isinstance(rules, Mapping):
            raise PipelineError(f"expect_all({rules!r}) takes a dict of name -> SQL condition")
        made = tuple(Expectation(n, c, action) for n, c in rules.items())
    return _expectation_decorator(made, loc)


def expect(description: str, constraint: str) -> Callable[[_F], _F]:
    """Count rows violating ``constraint`` (a SQL boolean) and keep them."""
    return _rules("warn", {description: constraint}, caller_location())


def expect_or_drop(description: str, constraint: str) -> Callable[[_F], _F]:
    """Drop rows violating ``constraint`` (counted in the batch metrics)."""
    return _rules("drop", {description: constraint}, caller_location())


def expect_or_fail(description: str, constraint: str) -> Callable[[_F], _F]:
    """Fail the batch (nothing committed) when a row violates ``constraint``."""
    return _rules("fail", {description: constraint}, caller_location())


def expect_all(expectations: Mapping[str, str]) -> Callable[[_F], _F]:
    """``expect`` for each ``name: condition`` of the dict."""
    return _rules("warn", expectations, caller_location())


def expect_all_or_drop(expectations: Mapping[str, str]) -> Callable[[_F], _F]:
    """``expect_or_drop`` for each ``name: condition`` of the dict."""
    return _rules("drop", expectations, caller_location())


def expect_all_or_fail(expectations: Mapping[str, str]) -> Callable[[_F], _F]:
    """``expect_or_fail`` for each ``name: condition`` of the dict."""
    return _rules("fail", expectations, caller_location())
