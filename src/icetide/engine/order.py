"""Which flows a (re)start compiles first: a guess at the DAG before discovery runs.

Discovery (running each query on empty batches) is what tells a flow's inputs, and it
is the slow part of a start. Until then a flow's string literals name the tables it
reads (``dp.read("dim_db.products")``), as ``app/scope.py`` finds them in the files:
the flows nearest the sources go first, so the first layer runs while the layers above
it are still compiled. A guess only: the compiled flows are linked by what discovery
found.
"""

from __future__ import annotations

import types
from collections.abc import Collection, Mapping

from icetide.pipelines.spec import FlowSpec


def named_tables(spec: FlowSpec, tables: Collection[str]) -> frozenset[str]:
    """The tables of ``tables`` that ``spec``'s query names in a string literal (its
    nested functions included), its own target aside."""
    code = getattr(spec.query, "__code__", None)
    found: set[str] = set()
    todo = [code] if isinstance(code, types.CodeType) else []
    while todo:
        for const in todo.pop().co_consts:
            if isinstance(const, types.CodeType):
                todo.append(const)
            elif isinstance(const, str) and const in tables:
                found.add(const)
    return frozenset(found - {spec.target})


def depths(flows: Mapping[str, FlowSpec], tables: Collection[str]) -> dict[str, int]:
    """Per flow, the hops above it by :func:`named_tables`: 0 for a flow that names no
    table another flow writes (a Kafka or CDC flow), 1 for the flows reading those, …"""
    writers: dict[str, list[str]] = {}
    for spec in flows.values():
        writers.setdefault(spec.target, []).append(spec.name)
    reads = {name: named_tables(spec, tables) for name, spec in flows.items()}
    out: dict[str, int] = {}

    def depth(name: str, seen: frozenset[str]) -> int:
        if name not in out:
            above = [depth(w, seen | {name}) + 1 for t in reads[name]
                     for w in writers.get(t, ()) if w not in seen and w != name]
            out[name] = max(above, default=0)
        return out[name]

    for name in flows:
        depth(name, frozenset())
    return out
