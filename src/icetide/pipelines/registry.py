"""The context-local registry that declarations write into while a pipeline loads.

Mirrors SDP's ``graph_element_registration_context``: the loader activates a
:class:`GraphRegistry` while it imports the pipeline's Python files, and every
``dp.table`` / ``dp.create_streaming_table`` / ... call registers a frozen spec into it.
Calling the API with no active registry is an error: declaring only makes sense while
a pipeline is being loaded (or inside ``with registration_context(GraphRegistry()):``
in a test).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from icetide.errors import PipelineError, listed
from icetide.pipelines.names import SourceLocation, qualify_name, where
from icetide.pipelines.spec import Expectation, FlowSpec, TableSpec

_Spec = TypeVar("_Spec", TableSpec, FlowSpec)
_V = TypeVar("_V")

_ACTIVE: ContextVar[GraphRegistry | None] = ContextVar("icetide_graph_registry", default=None)


class GraphRegistry:
    """Collects the tables and flows one pipeline declares, with their source locations.

    ``database``/``catalog`` qualify names declared without a database (``"clicks"`` →
    ``"<database>.clicks"``); duplicates are rejected at once, naming both places.
    """

    def __init__(self, *, database: str | None = None, catalog: str | None = None,
                 configuration: Mapping[str, str] | None = None) -> None:
        self.database = database
        self.catalog = catalog
        #: the spec's ``configuration:`` (after ``--conf``), for ``dp.configuration``
        self.configuration: Mapping[str, str] = dict(configuration or {})
        self._tables: dict[str, TableSpec] = {}
        self._flows: dict[str, FlowSpec] = {}
        # id(function) -> (function, table name) for expectations stacked above @dp.table.
        self._table_functions: dict[int, tuple[Callable[..., object], str]] = {}
        # id(function) -> (function, where) for expectations waiting for their @dp.table.
        self._pending: dict[int, tuple[Callable[..., object], SourceLocation | None]] = {}

    # -- names ---------------------------------------------------------------------------
    def qualify(self, name: str, location: SourceLocation | None = None) -> str:
        """The registry's qualified form ``db.table`` of a declared or referenced name."""
        try:
            return qualify_name(name, self.database, self.catalog)
        except PipelineError as exc:
            raise PipelineError(f"{where(location)}{exc}") from None

    # -- registration --------------------------------------------------------------------
    def register_table(self, spec: TableSpec) -> None:
        """Add a table; a second declaration of the same name is an error naming both."""
        _add(self._tables, spec, "table", "rename one or remove the duplicate")

    def register_flow(self, spec: FlowSpec) -> None:
        """Add a flow; a second flow of the same name is an error naming both."""
        _add(self._flows, spec, "flow", "give one of them another name=...")

    # -- expectations --------------------------------------------------------------------
    def bind_function(self, func: Callable[..., object], table: str) -> None:
        """Remember that ``func`` is the query of ``table`` (for decorators stacked above)."""
        self._table_functions[id(func)] = (func, table)
        self._pending.pop(id(func), None)

    def table_of(self, func: Callable[..., object]) -> str | None:
        """The table whose query ``func`` is, if it was registered by a table decorator."""
        entry = self._table_functions.get(id(func))
        return entry[1] if entry is not None and entry[0] is func else None

    def add_expectations(self, table: str, expectations: tuple[Expectation, ...]) -> None:
        """Prepend ``expectations`` (declared above the table decorator) to ``table``."""
        spec = self._tables[table]
        self._tables[table] = dataclasses.replace(
            spec, expectations=expectations + spec.expectations
        )

    def note_pending(self, func: Callable[..., object], location: SourceLocation | None) -> None:
        """``func`` carries expectations that a table decorator below/above must consume."""
        self._pending.setdefault(id(func), (func, location))

    def is_pending(self, func: Callable[..., object]) -> bool:
        entry = self._pending.get(id(func))
        return entry is not None and entry[0] is func

    # -- result --------------------------------------------------------------------------
    @property
    def tables(self) -> Mapping[str, TableSpec]:
        return dict(self._tables)

    @property
    def flows(self) -> Mapping[str, FlowSpec]:
        return dict(self._flows)

    def finish(self) -> None:
        """Check nothing was left dangling: expectations must belong to a table."""
        for func, location in self._pending.values():
            names = [e.name for e in getattr(func, EXPECTATIONS_ATTR, ())]
            raise PipelineError(
                f"{where(location)}expectation(s) {listed(names)} on function "
                f"{getattr(func, '__name__', func)!r} belong to no table: stack @dp.expect... "
                "directly above or below @dp.table / @dp.materialized_view / @dp.temporary_view"
            )


def _add(specs: dict[str, _Spec], spec: _Spec, what: str, fix: str) -> None:
    other = specs.get(spec.name)
    if other is not None:
        raise PipelineError(f"{what} {spec.name} is declared twice: at {other.location} and "
                            f"at {spec.location}; {fix}")
    specs[spec.name] = spec


#: Attribute where expectation decorators park their rules until a table decorator reads them.
EXPECTATIONS_ATTR = "__icetide_expectations__"


@contextmanager
def set_within(var: ContextVar[_V], value: _V) -> Iterator[_V]:
    """Set ``var`` to ``value`` inside the ``with`` block, then back to what it was (the
    registry being declared into here, the running batch in ``flows.context``)."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


@contextmanager
def registration_context(registry: GraphRegistry) -> Iterator[GraphRegistry]:
    """Make ``registry`` the target of declarations inside the ``with`` block."""
    with set_within(_ACTIVE, registry):
        yield registry


def current_registry() -> GraphRegistry | None:
    """The active registry, or None outside a loading context."""
    return _ACTIVE.get()


def active_registry(api_name: str) -> GraphRegistry:
    """The active registry; a PipelineError explaining the fix when there is none."""
    registry = _ACTIVE.get()
    if registry is None:
        raise PipelineError(
            f"dp.{api_name}(...) was called outside a pipeline load: declarations register "
            "only while icetide loads a pipeline (icetide run / dry-run, or "
            "icetide.pipelines.load_pipeline); in a test, wrap them in "
            "'with registration_context(GraphRegistry(database=\"db\")):'"
        )
    return registry
