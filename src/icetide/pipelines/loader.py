"""Loading a pipeline folder: spec file → library files → imported with a registry → graph.

Each library file is imported under a unique module name with a
:class:`~icetide.pipelines.registry.GraphRegistry` active, so its ``dp.*`` calls
register specs. The pipeline folder is on ``sys.path`` while importing, so the files can
import helper modules next to them. Nothing runs but the module bodies: query functions
are only stored.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib.util
import itertools
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from glob import has_magic
from pathlib import Path

from icetide.errors import IcetideError, PipelineError
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.registry import GraphRegistry, registration_context
from icetide.pipelines.spec import PipelineDefaults, PipelineSpec, TableOverride, TableSpec
from icetide.pipelines.specfile import read_spec_file

#: Libraries when the spec lists none: the folder's own ``*.py`` (``_*.py`` are helpers).
DEFAULT_LIBRARY_GLOB = "*.py"
_LOAD_IDS = itertools.count(1)


def load_pipeline(path: str | Path, *, env: Mapping[str, str] | None = None,
                  configuration: Mapping[str, str] | None = None) -> PipelineGraph:
    """Load the pipeline in folder ``path`` (or at spec file ``path``) into a graph.

    ``env`` resolves ``${VAR}`` in the spec file (default: the process environment);
    ``configuration`` overrides entries of its ``configuration:`` (``icetide run --conf``).
    """
    spec = read_spec_file(path, env=env, configuration=configuration)
    files = library_files(spec)
    registry = GraphRegistry(database=spec.database, catalog=spec.catalog,
                             configuration=spec.configuration)
    load_id = next(_LOAD_IDS)
    modules = tuple(_module_name(load_id, spec.root, file) for file in files)
    with registration_context(registry), _on_sys_path(spec.root):
        for file, module in zip(files, modules, strict=True):
            _import_file(file, module)
    registry.finish()
    tables = apply_spec_tables(registry.tables, spec)
    return PipelineGraph(spec=spec, tables=tables, flows=registry.flows, modules=modules)


def library_files(spec: PipelineSpec) -> list[Path]:
    """The Python files the spec's ``libraries`` globs select, in a stable order."""
    root = spec.root
    patterns = spec.libraries or (DEFAULT_LIBRARY_GLOB,)
    files: dict[Path, None] = {}
    for pattern in patterns:
        matched = _glob(root, pattern)
        if not spec.libraries:
            matched = [p for p in matched if not p.name.startswith("_")]
        if not matched:
            raise PipelineError(
                f"{spec.path or root}: libraries pattern {pattern!r} matches no .py file "
                f"under {root}: fix the pattern or add the file"
            )
        files.update(dict.fromkeys(matched))
    return list(files)


def _glob(root: Path, pattern: str) -> list[Path]:
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise PipelineError(
            f"libraries pattern {pattern!r} must be relative to {root} and stay inside it"
        )
    if pattern.endswith("**"):  # SDP's "folder/**" means every file below the folder
        pattern += "/*"
    if not has_magic(pattern):
        candidates = [root / pattern] if (root / pattern).is_file() else []
    else:
        candidates = sorted(root.glob(pattern))
    out = []
    for p in candidates:
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        if p.suffix == ".sql":
            raise PipelineError(
                f"{p}: SQL definition files are not supported by icetide: declare the "
                "dataset in Python (from icetide import pipelines as dp)"
            )
        if p.suffix == ".py":
            out.append(p.resolve())
    return out


def _module_name(load_id: int, root: Path, file: Path) -> str:
    try:
        rel = file.relative_to(root.resolve())
    except ValueError:
        rel = Path(file.name)
    stem = re.sub(r"\W", "_", str(rel.with_suffix("")))
    return f"icetide_pipeline_{load_id}_{stem}"


def _import_file(file: Path, module_name: str) -> None:
    module_spec = importlib.util.spec_from_file_location(module_name, file)
    if module_spec is None or module_spec.loader is None:
        raise PipelineError(f"{file}: cannot be imported as a Python module; is it a .py file?")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        module_spec.loader.exec_module(module)
    except IcetideError:
        del sys.modules[module_name]
        raise
    except Exception as exc:
        del sys.modules[module_name]
        raise PipelineError(
            f"{file}: importing it failed: {type(exc).__name__}: {exc} (fix the file; "
            "declarations must not need Spark at import time)"
        ) from exc


@contextmanager
def _on_sys_path(folder: Path) -> Iterator[None]:
    entry = str(folder.resolve())
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def apply_defaults(table: TableSpec, defaults: PipelineDefaults) -> TableSpec:
    """Fill a stored table's unset freshness target/warning from the spec's ``defaults``."""
    if table.is_view:
        return table
    freshness = table.freshness if table.freshness is not None else defaults.freshness
    warn = table.freshness_warn
    if warn is None and defaults.freshness_warn is not None and (
        freshness is None or defaults.freshness_warn < freshness
    ):
        warn = defaults.freshness_warn
    if (freshness, warn) == (table.freshness, table.freshness_warn):
        return table
    return dataclasses.replace(table, freshness=freshness, freshness_warn=warn)


def apply_spec_tables(tables: Mapping[str, TableSpec], spec: PipelineSpec) -> dict[str, TableSpec]:
    """``tables`` with the spec file's ``tables:`` entries applied in file order (they
    replace what the code declares), then its ``defaults:`` filling what is still unset.

    An entry matches stored tables by ``db.table`` name or glob (``dws.*``); one without
    a dot matches the table part alone (``clickevent``, ``*``). An entry that matches
    nothing is an error: a misspelt name must not leave a target silently unset."""
    out = dict(tables)
    origin = str(spec.path or "pipeline spec")
    stored = [name for name, t in out.items() if not t.is_view]
    for pattern, override in spec.tables.items():
        names = [n for n in stored
                 if fnmatch.fnmatchcase(n if "." in pattern else n.split(".", 1)[1], pattern)]
        if not names:
            raise PipelineError(
                f"{origin}: tables.{pattern} matches no table of the pipeline (its tables: "
                f"{', '.join(sorted(stored)) or 'none'}): fix the name or the glob")
        for name in names:
            out[name] = _overridden(out[name], override, f"{origin}: tables.{pattern}")
    return {name: apply_defaults(t, spec.defaults) for name, t in out.items()}


def _overridden(table: TableSpec, override: TableOverride, where: str) -> TableSpec:
    fresh = table.freshness if override.freshness is None else override.freshness
    warn = table.freshness_warn if override.freshness_warn is None else override.freshness_warn
    try:
        return dataclasses.replace(table, freshness=fresh, freshness_warn=warn)
    except PipelineError as exc:
        raise PipelineError(
            f"{where} ({table.name}): {exc}; set freshness and freshness_warn together "
            "in this entry") from None
