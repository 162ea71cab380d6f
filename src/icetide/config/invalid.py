"""A pydantic ``ValidationError`` worded as icetide's message: the one place that does it.

Everything icetide validates with pydantic (the configuration and its environment
overlay, a pipeline's specs, a source's settings, a table's maintenance properties)
reports a bad value the same way, one line per bad key, naming where it was written,
the key as the user wrote it (a YAML path, an environment variable, a table property),
the value, what is wrong and the fix:

* ``<where>: unknown key '<key>' (check the spelling; allowed: a, b; see <docs>)``
* ``<where>: missing required key '<key>'; write <hint>``
* ``<where>: <key>=<value>: <what is wrong>; write <hint> (see <docs>)``

Callers only choose the words (``where``, how a location is named, the allowed keys,
hints, the docs): the message's shape stays here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from icetide.errors import listed

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

#: Where pydantic found a bad value: keys and list indexes from the top of the input.
Loc = tuple[int | str, ...]


def dotted(loc: Loc) -> str:
    """``("flows", "trigger_interval")`` → ``flows.trigger_interval`` (the default name)."""
    return ".".join(str(part) for part in loc)


def validation_message(exc: ValidationError, where: str = "", *,
                       key: Callable[[Loc], str] = dotted, allowed: Iterable[str] = (),
                       hints: Mapping[str, str] | None = None, see: str = "",
                       given: object = None) -> str:
    """``exc`` as icetide's message (one line per bad key, in pydantic's order).

    ``where``: the file, section or object the values came from; ``key``: how a
    location is named to the user; ``allowed``: the keys an unknown key is checked
    against; ``hints``: what to write instead, by key name; ``see``: the docs to read;
    ``given``: the input as the user wrote it (a value is shown from it, not as pydantic
    saw it after a conversion: ``'1 minute'``, not ``60.0``).
    Pydantic reports a value against each member of a union: the first report of a key
    is the one kept.
    """
    lines: dict[str, str] = {}
    allowed = tuple(allowed)
    for error in exc.errors(include_url=False):
        loc, written = _written(given, error)
        name = key(loc)
        if name not in lines:
            error["input"] = written
            lines[name] = _line(error, name, allowed, (hints or {}).get(name), see)
    prefix = f"{where}: " if where else ""
    return "\n".join(prefix + line for line in lines.values())


def _written(given: object, error: ErrorDetails) -> tuple[Loc, object]:
    """Where the user wrote the bad value, and the value as written. Pydantic's location
    goes on past a value into a union's members (``("n", "int")``): the part past a
    value of ``given`` is dropped. Without ``given``: pydantic's location and input."""
    loc: Loc = tuple(error["loc"])
    node = given
    for depth, part in enumerate(loc):
        if isinstance(node, Mapping) and (part in node or str(part) in node):
            node = node[part] if part in node else node[str(part)]
        elif isinstance(node, list | tuple) and isinstance(part, int) and part < len(node):
            node = node[part]
        elif given is None or isinstance(node, Mapping) or depth == 0:
            return loc, error.get("input")  # a key that is missing, or not the user's
        else:
            return loc[:depth], node
    return loc, node if loc else error.get("input")


def _line(error: ErrorDetails, name: str, allowed: tuple[str, ...], hint: str | None,
          see: str) -> str:
    """One bad key's line, without its ``where``."""
    if error["type"] == "extra_forbidden":
        fixes = ["check the spelling", *([f"allowed: {listed(allowed)}"] if allowed else []),
                 *([f"see {see}"] if see else [])]
        return f"unknown key '{name}' ({'; '.join(fixes)})"
    write = f"; write {hint}" if hint else ""
    if error["type"] == "missing":
        return f"missing required key '{name}'{write}"
    value = f"{name}={error.get('input')!r}: " if name else ""
    return f"{value}{_problem(error)}{write}" + (f" (see {see})" if see else "")


def _problem(error: ErrorDetails) -> str:
    """What is wrong with the value, in pydantic's words (a zero bound said plainly)."""
    if error["type"] == "greater_than" and (error.get("ctx") or {}).get("gt") == 0:
        return "must be positive"
    return str(error["msg"]).removeprefix("Value error, ")
