"""Paimon-style merge engines for primary-key tables, as specs (pure, no JVM).

A primary-key table has one merge engine: how the rows of a batch that share a key, and
the row already stored under that key, become the one row the table keeps.

* :class:`Deduplicate` — the newest row wins;
* :class:`PartialUpdate` — non-null fields overwrite, optionally versioned per sequence
  group;
* :class:`Aggregation` — every non-key column is folded with its function;
* :class:`FirstRow` — the first row of a key is kept for ever.

Change kinds follow Flink/Paimon RowKind (``+I``, ``+U``, ``-U``, ``-D``; any other value,
NULL included, fails the batch naming it); each engine's ``on_delete`` says what a
retraction (``-U``/``-D``) does. :func:`parse_merge_engine` reads an engine from a spec, a
name or a dict; :mod:`icetide.tables.merge_sql` generates its SQL. Each engine's rules,
the ordering of a batch's rows and the limits: docs/semantics.md ("Merge engines").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from icetide.errors import PipelineError, listed

ADD_OPS = ("+I", "+U")
RETRACT_OPS = ("-U", "-D")
OPS = ADD_OPS + RETRACT_OPS
AGG_FUNCTIONS = (
    "sum", "count", "min", "max", "last_non_null", "last_value",
    "first_non_null", "first_value", "bool_and", "bool_or",
)
ORDERED_FUNCTIONS = frozenset({"last_non_null", "last_value", "first_non_null", "first_value"})
RETRACTABLE_FUNCTIONS = frozenset({"sum", "count", "last_non_null", "first_non_null"})
_AGG_ALIASES = {"last_non_null_value": "last_non_null", "first_non_null_value": "first_non_null"}
_PAIMON_ONLY = frozenset({
    "product", "listagg", "collect", "merge_map", "hll_sketch", "theta_sketch", "rbm32",
    "rbm64", "nested_update", "primary_key", "merge_map_with_keytime", "hll_union",
})


def _check_on_delete(engine: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise PipelineError(
            f"{engine}: on_delete={value!r} is not supported; use one of "
            + ", ".join(repr(a) for a in allowed)
        )


def _check_name(engine: str, what: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise PipelineError(f"{engine}: {what} must be a non-empty column name, got {value!r}")


def _check_sequenced(engine: str, sequence_field: str | None, on_delete: str,
                     allowed: tuple[str, ...]) -> None:
    """The checks of every engine ordered by an optional ``sequence_field``."""
    if sequence_field is not None:
        _check_name(engine, "sequence_field", sequence_field)
    _check_on_delete(engine, on_delete, allowed)


@dataclass(frozen=True)
class _RowPerKey:
    """An engine that keeps one whole row per key, ordered by an optional sequence field;
    ``deletes``: the ``on_delete`` policies it supports."""

    sequence_field: str | None = None
    on_delete: str = "remove"
    name: ClassVar[str]
    deletes: ClassVar[tuple[str, ...]]

    def __post_init__(self) -> None:
        _check_sequenced(self.name, self.sequence_field, self.on_delete, self.deletes)


@dataclass(frozen=True)
class Deduplicate(_RowPerKey):
    """The newest row per key wins (see the module docstring)."""

    name: ClassVar[str] = "deduplicate"
    deletes: ClassVar[tuple[str, ...]] = ("remove", "ignore", "error")


@dataclass(frozen=True)
class PartialUpdate:
    """Non-null fields overwrite; sequence groups version column groups."""

    sequence_field: str | None = None
    sequence_groups: Mapping[str, Sequence[str]] = field(default_factory=dict, hash=False)
    on_delete: str = "error"
    #: A row none of whose fields (sequence fields aside) holds a value after a merge is
    #: deleted: each flow owns a group, and a row whose every group was retracted is gone.
    remove_empty: bool = False
    name: ClassVar[str] = "partial-update"

    def __post_init__(self) -> None:
        _check_sequenced(self.name, self.sequence_field, self.on_delete,
                         ("error", "ignore", "remove"))
        groups: dict[str, tuple[str, ...]] = {}
        owner: dict[str, str] = {}
        for seq, members in dict(self.sequence_groups).items():
            _check_name(self.name, "a sequence group's sequence field", seq)
            cols = _member_list(members)
            if not cols or seq in cols or seq == self.sequence_field:
                raise PipelineError(
                    f"{self.name}: sequence group {seq!r} -> {members!r} must list at least one "
                    "column other than its own sequence field and the row sequence_field"
                )
            for col in cols:
                _check_name(self.name, f"a column of sequence group {seq!r}", col)
                if col in owner or col in self.sequence_groups or col == self.sequence_field:
                    raise PipelineError(
                        f"{self.name}: column {col!r} is in sequence group {seq!r} but is already "
                        f"a sequence field or in group {owner.get(col, col)!r}; a column may "
                        "belong to one group only"
                    )
                owner[col] = seq
            groups[seq] = cols
        object.__setattr__(self, "sequence_groups", MappingProxyType(groups))

    def group_of(self, column: str) -> str | None:
        """The sequence field guarding ``column``, or ``None``."""
        for seq, cols in self.sequence_groups.items():
            if column in cols:
                return seq
        return None


def _member_list(members: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(members, str):
        return tuple(m.strip() for m in members.split(",") if m.strip())
    return tuple(members)


def normalize_function(function: str, where: str = "aggregation") -> str:
    """Canonical aggregate function name, or a :class:`PipelineError` naming the choices."""
    name = _AGG_ALIASES.get(function.strip().lower(), function.strip().lower())
    if name in AGG_FUNCTIONS:
        return name
    hint = " (a Paimon function icetide does not implement)" if name in _PAIMON_ONLY else ""
    raise PipelineError(
        f"{where}: unknown aggregate function {function!r}{hint}; use one of "
        + ", ".join(AGG_FUNCTIONS)
    )


@dataclass(frozen=True)
class Aggregation:
    """Each non-key column is folded with its aggregate function; the columns of a
    sequence group all take the values of the row with the newest group sequence (a
    ``max`` column), as Paimon's ``fields.<seq>.sequence-group`` does."""

    functions: Mapping[str, str] = field(default_factory=dict, hash=False)
    default: str = "last_non_null"
    on_delete: str = "error"
    sequence_groups: Mapping[str, Sequence[str]] = field(default_factory=dict, hash=False)
    name: ClassVar[str] = "aggregation"

    def __post_init__(self) -> None:
        _check_on_delete(self.name, self.on_delete, ("error", "ignore", "retract"))
        funcs = {}
        for col, fn in dict(self.functions).items():
            _check_name(self.name, "a function's column", col)
            funcs[col] = normalize_function(fn, f"aggregation column {col!r}")
        object.__setattr__(self, "default", normalize_function(self.default, "aggregation default"))
        groups = _aggregation_groups(self, funcs)
        object.__setattr__(self, "functions", MappingProxyType(funcs))
        object.__setattr__(self, "sequence_groups", MappingProxyType(groups))
        if self.on_delete == "retract":
            bad = {c: f for c, f in funcs.items() if f not in RETRACTABLE_FUNCTIONS}
            if self.default not in RETRACTABLE_FUNCTIONS:
                bad["(default)"] = self.default
            if bad:
                raise PipelineError(
                    f"aggregation: on_delete='retract' cannot retract "
                    f"{listed(f'{c}: {f}' for c, f in bad.items())}; only "
                    f"{listed(sorted(RETRACTABLE_FUNCTIONS))} can: change those functions or use "
                    "on_delete='ignore'"
                )

    def function_of(self, column: str) -> str:
        """The aggregate function of ``column`` (its own or the default)."""
        return self.functions.get(column, self.default)

    def group_of(self, column: str) -> str | None:
        """The sequence field of the group ``column`` belongs to, or ``None``."""
        return next((seq for seq, cols in self.sequence_groups.items() if column in cols), None)


def _aggregation_groups(engine: Aggregation, funcs: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Checked sequence groups of an aggregation; each group's sequence field is a ``max``
    (added to ``funcs`` when not declared)."""
    groups = {seq: _member_list(cols) for seq, cols in dict(engine.sequence_groups).items()}
    if groups and engine.on_delete == "retract":
        raise PipelineError("aggregation: sequence_groups cannot be retracted row by row "
                            "(on_delete='retract'): use on_delete='ignore' or 'error'")
    seen: set[str] = set()
    for seq, cols in groups.items():
        _check_name(engine.name, "a sequence group's sequence field", seq)
        if funcs.setdefault(seq, "max") != "max":
            raise PipelineError(f"aggregation: sequence group field {seq!r} must be aggregated "
                                f"with max (it is {funcs[seq]!r}): drop its function")
        for col in cols:
            _check_name(engine.name, f"a column of sequence group {seq!r}", col)
            if col in seen or col in groups or col in funcs:
                raise PipelineError(
                    f"aggregation: column {col!r} of sequence group {seq!r} is already a "
                    "sequence field, in another group or given a function: a group's columns "
                    "take the values of its newest row, nothing else")
            seen.add(col)
        if not cols:
            raise PipelineError(f"aggregation: sequence group {seq!r} lists no column")
    return groups


@dataclass(frozen=True)
class FirstRow(_RowPerKey):
    """The first row per key is kept; later rows are ignored."""

    on_delete: str = "ignore"
    name: ClassVar[str] = "first-row"
    deletes: ClassVar[tuple[str, ...]] = ("ignore", "error")


MergeEngine = Deduplicate | PartialUpdate | Aggregation | FirstRow
ENGINE_NAMES = ("deduplicate", "partial-update", "aggregation", "first-row")


def deduplicate(sequence_field: str | None = None, *, on_delete: str = "remove") -> Deduplicate:
    """``merge_engine=deduplicate("ts")``."""
    return Deduplicate(sequence_field, on_delete)


def partial_update(
    sequence_field: str | None = None,
    *,
    sequence_groups: Mapping[str, Sequence[str] | str] | None = None,
    on_delete: str = "error",
    remove_empty: bool = False,
) -> PartialUpdate:
    """``merge_engine=partial_update(sequence_groups={"g1_ts": ["a", "b"]})``;
    ``remove_empty``: delete a row left without any value (its groups all retracted)."""
    groups = {k: _member_list(v) for k, v in (sequence_groups or {}).items()}
    if not isinstance(remove_empty, bool):
        raise PipelineError(f"partial-update: remove_empty={remove_empty!r} must be true or false")
    return PartialUpdate(sequence_field, groups, on_delete, remove_empty)


def aggregation(
    functions: Mapping[str, str] | None = None,
    /,
    *,
    default: str = "last_non_null",
    on_delete: str = "error",
    sequence_groups: Mapping[str, Sequence[str] | str] | None = None,
    **columns: str,
) -> Aggregation:
    """``merge_engine=aggregation(views="sum", last_seen="max")``;
    ``sequence_groups={"name_seq": ["name", "price"]}``: those columns come from the row
    with the newest ``name_seq`` (a NULL sequence leaves the group as it is)."""
    groups = {k: _member_list(v) for k, v in (sequence_groups or {}).items()}
    return Aggregation({**(functions or {}), **columns}, default, on_delete, groups)


def first_row(sequence_field: str | None = None, *, on_delete: str = "ignore") -> FirstRow:
    """``merge_engine=first_row()``."""
    return FirstRow(sequence_field, on_delete)


def _engine_name(value: str) -> str:
    name = value.strip().lower().replace("_", "-")
    if name not in ENGINE_NAMES:
        raise PipelineError(
            f"unknown merge engine {value!r}: use one of {', '.join(ENGINE_NAMES)} "
            "(or a spec such as icetide.tables.merge_engines.aggregation(views='sum'))"
        )
    return name


def _flag(options: dict[str, Any], key: str) -> bool:
    value = options.pop(key, False)
    return value is True or str(value).strip().lower() == "true"


def _paimon_options(options: dict[str, Any]) -> dict[str, Any]:
    """Translate Paimon table-option keys into icetide keyword arguments."""
    out: dict[str, Any] = {}
    groups: dict[str, str] = {}
    functions: dict[str, str] = {}
    for key in [k for k in options if k.startswith("fields.")]:
        value = options.pop(key)
        if key == "fields.default-aggregate-function":
            out["default"] = value
        elif key.endswith(".sequence-group"):
            groups[key[len("fields."):-len(".sequence-group")]] = value
        elif key.endswith(".aggregate-function"):
            functions[key[len("fields."):-len(".aggregate-function")]] = value
        else:
            raise PipelineError(f"merge engine option {key!r} is not supported by icetide")
    if "sequence.field" in options:
        out["sequence_field"] = options.pop("sequence.field")
    if _flag(options, "ignore-delete"):
        out["on_delete"] = "ignore"
    if _flag(options, "partial-update.remove-record-on-delete"):
        out["on_delete"] = "remove"
    if groups:
        out["sequence_groups"] = groups
    if functions:
        out["functions"] = functions
    return out


def parse_merge_engine(value: MergeEngine | str | Mapping[str, Any]) -> MergeEngine:
    """A merge engine from a spec object, a name, or a dict.

    Names: ``deduplicate``, ``partial-update``, ``aggregation``, ``first-row`` (``_`` or
    ``-``), optionally called with ``key=value`` arguments:
    ``"deduplicate(sequence_field=ts)"``, ``"aggregation(views=sum, uv=max)"`` (aggregation's
    keys other than ``default``/``on_delete`` are column functions). Dicts name the engine
    under ``engine`` (or Paimon's ``merge-engine``) and take either icetide keys
    (``sequence_field``, ``sequence_groups``, ``functions``, ``default``, ``on_delete``)
    or Paimon table options (``sequence.field``, ``fields.<seq>.sequence-group``,
    ``fields.<col>.aggregate-function``, ``fields.default-aggregate-function``,
    ``ignore-delete``, ``partial-update.remove-record-on-delete``).
    """
    if isinstance(value, Deduplicate | PartialUpdate | Aggregation | FirstRow):
        return value
    if isinstance(value, str):
        options: dict[str, Any] = _parse_call(value)
    elif isinstance(value, Mapping):
        options = dict(value)
    else:
        raise PipelineError(
            f"merge_engine={value!r} is not a merge engine: use a name such as 'deduplicate', "
            "a dict, or a spec from icetide.tables.merge_engines"
        )
    raw = options.pop("engine", None) or options.pop("merge-engine", None)
    raw = raw or options.pop("merge_engine", None)
    if not isinstance(raw, str):
        raise PipelineError(
            f"merge engine spec {value!r} names no engine: add 'engine': one of "
            + ", ".join(ENGINE_NAMES)
        )
    name = _engine_name(raw)
    kwargs = {**_paimon_options(options), **options}
    return _build_engine(name, kwargs)


_CALL = re.compile(r"^\s*([A-Za-z_-]+)\s*\((.*)\)\s*$", re.DOTALL)


def _parse_call(text: str) -> dict[str, Any]:
    """``"aggregation(views=sum)"`` → ``{"engine": "aggregation", "functions": {...}}``."""
    match = _CALL.match(text)
    if match is None:
        return {"engine": text}
    options: dict[str, Any] = {}
    for arg in (a.strip() for a in match.group(2).split(",")):
        key, sep, val = (part.strip() for part in arg.partition("="))
        if not arg:
            continue
        if not sep or not key or not val:
            raise PipelineError(
                f"merge engine {text!r}: argument {arg!r} is not key=value; write e.g. "
                "'aggregation(views=sum, uv=max)' or 'deduplicate(sequence_field=ts)'"
            )
        options[key] = val.strip("'\"")
    if _engine_name(match.group(1)) == "aggregation":
        functions = {k: options.pop(k) for k in list(options) if k not in ("default", "on_delete")}
        options["functions"] = functions
    return {"engine": match.group(1), **options}


_ENGINE_ARGS: dict[str, tuple[str, ...]] = {
    "deduplicate": ("sequence_field", "on_delete"),
    "partial-update": ("sequence_field", "sequence_groups", "on_delete", "remove_empty"),
    "aggregation": ("functions", "default", "on_delete", "sequence_groups"),
    "first-row": ("sequence_field", "on_delete"),
}


def _build_engine(name: str, kwargs: dict[str, Any]) -> MergeEngine:
    unknown = sorted(set(kwargs) - set(_ENGINE_ARGS[name]))
    if unknown:
        raise PipelineError(
            f"merge engine {name!r} does not take option(s) {listed(unknown)}; it takes "
            + ", ".join(_ENGINE_ARGS[name])
        )
    if name == "deduplicate":
        return deduplicate(**kwargs)
    if name == "partial-update":
        return partial_update(**kwargs)
    if name == "aggregation":
        return aggregation(kwargs.pop("functions", None), **kwargs)
    return first_row(**kwargs)

