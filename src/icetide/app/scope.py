"""Which tables a pipeline's status and dashboard show: the tables it declares, and the
lake's tables its code reads.

A pipeline's declarations can depend on its configuration (``examples/clickstream``
declares ``dim_db.*`` only when ``clickstream.dims`` is ``cdc``), while the lake holds
what earlier runs wrote. The tables its flows read with ``dp.read("db.table")`` or
``dp.read_stream(...)`` are found in its library files without running them (string
literals in the source) and shown when the lake has them, so the page shows the lake the
user has, whatever configuration the pipeline is loaded with.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterable
from pathlib import Path

from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.loader import library_files

log = logging.getLogger(__name__)

#: ``dp.<name>("db.table")`` calls whose first argument names a table the flow reads.
READ_CALLS = frozenset({"read", "read_stream"})
API_MODULE = "icetide.pipelines"


def _api_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound to ``icetide.pipelines`` (``from icetide import pipelines as dp``) and
    to its read functions (``from icetide.pipelines import read``)."""
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "icetide":
            modules |= {a.asname or a.name for a in node.names if a.name == "pipelines"}
        elif isinstance(node, ast.ImportFrom) and node.module == API_MODULE:
            functions |= {a.asname or a.name for a in node.names if a.name in READ_CALLS}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == API_MODULE and a.asname}
    return modules, functions


def _literal_reads(tree: ast.AST) -> Iterable[str]:
    """The string literal first arguments of ``dp.read(...)`` / ``dp.read_stream(...)``."""
    modules, functions = _api_names(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func, first = node.func, node.args[0]
        ours = (isinstance(func, ast.Attribute) and func.attr in READ_CALLS
                and isinstance(func.value, ast.Name) and func.value.id in modules) or (
                    isinstance(func, ast.Name) and func.id in functions)
        if ours and isinstance(first, ast.Constant) and isinstance(first.value, str):
            yield first.value


def read_tables(graph: PipelineGraph) -> list[str]:
    """``db.table`` of every table the pipeline's code reads by a literal name, whether or
    not it declares it (sorted)."""
    found: set[str] = set()
    for path in library_files(graph.spec):
        try:
            tree = ast.parse(Path(path).read_text(encoding="utf-8"), str(path))
        except (OSError, SyntaxError, ValueError) as exc:  # the loader reports those
            log.debug("cannot scan %s for reads: %s", path, exc)
            continue
        for name in _literal_reads(tree):
            qualified = graph.qualify(name)
            if qualified.count(".") == 1:
                found.add(qualified)
    return sorted(found)
