"""Reading ``icetide-pipeline.yml`` (or SDP's ``spark-pipeline.yml``) into a PipelineSpec.

The file takes SDP's keys — ``name``, ``catalog``, ``database`` (alias ``schema``),
``configuration``, ``libraries`` (globs; a bare path is shorthand for ``{glob: {include:
...}}``) — plus icetide's ``sources``, ``defaults`` and ``tables`` (freshness and the
like per table name or glob, replacing what the code declares). SDP's ``storage`` (its
checkpoint location) is refused: positions live in the tables. Unknown keys are errors
naming the file and the key. String values may use ``${VAR}`` / ``${VAR:-default}``
(:mod:`.interpolate`). A whole file: docs/config.md ("Pipeline spec files").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import yaml

from icetide.config import MaintenanceConfig
from icetide.errors import ConfigError, PipelineError
from icetide.pipelines.interpolate import interpolate
from icetide.pipelines.spec import PipelineDefaults, PipelineSpec, TableOverride, parse_seconds

SPEC_FILE_NAMES = (
    "icetide-pipeline.yml",
    "icetide-pipeline.yaml",
    "spark-pipeline.yml",
    "spark-pipeline.yaml",
)
TOP_LEVEL_KEYS = (
    "name", "catalog", "database", "schema", "storage", "libraries", "configuration",
    "sources", "defaults", "tables",
)
DURATION_DEFAULTS = ("trigger_interval", "freshness", "freshness_warn")
DEFAULTS_KEYS = (*DURATION_DEFAULTS, "maintenance")
TABLE_OVERRIDE_KEYS = ("freshness", "freshness_warn")


def find_spec_file(path: str | Path) -> Path:
    """The spec file itself, or the one spec file inside folder ``path``."""
    p = Path(path)
    if p.is_file():
        if p.suffix not in (".yml", ".yaml"):
            raise PipelineError(
                f"{p} is not a pipeline spec file: pass the pipeline folder that holds "
                f"{SPEC_FILE_NAMES[0]} (here probably {str(p.parent)!r}), or that file itself"
            )
        return p
    if not p.is_dir():
        raise PipelineError(
            f"pipeline path {str(p)!r} does not exist: pass a pipeline folder or its "
            f"{SPEC_FILE_NAMES[0]}"
        )
    found = [p / n for n in SPEC_FILE_NAMES if (p / n).is_file()]
    if not found:
        raise PipelineError(
            f"{p}: no pipeline spec file: create {SPEC_FILE_NAMES[0]} (also accepted: "
            f"{', '.join(SPEC_FILE_NAMES[1:])})"
        )
    if len(found) > 1:
        names = ", ".join(f.name for f in found)
        raise PipelineError(f"{p}: several pipeline spec files ({names}): keep exactly one")
    return found[0]


def read_spec_file(path: str | Path, *, env: Mapping[str, str] | None = None,
                   configuration: Mapping[str, str] | None = None) -> PipelineSpec:
    """Parse and validate a pipeline spec file.

    ``${VAR}`` / ``${VAR:-default}`` in its strings come from ``env`` (default: the
    process environment); ``configuration`` entries override the file's (``--conf``).
    """
    file = find_spec_file(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PipelineError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PipelineError(f"{file}: expected a mapping with at least 'name:', got {data!r}")
    data = interpolate(data, os.environ if env is None else env, str(file))
    if configuration:
        data["configuration"] = {**(data.get("configuration") or {}), **configuration}
    return spec_from_mapping(data, file)


def _check_keys(data: Mapping[str, object], allowed: tuple[str, ...], origin: str) -> None:
    for key in data:
        if key not in allowed:
            raise PipelineError(
                f"{origin}: unknown key '{key}' (check the spelling; allowed: "
                f"{', '.join(allowed)})"
            )


def spec_from_mapping(data: Mapping[str, object], file: Path | None = None) -> PipelineSpec:
    """Build a PipelineSpec from the parsed YAML mapping of ``file``."""
    origin = str(file) if file is not None else "pipeline spec"
    _check_keys(data, TOP_LEVEL_KEYS, origin)
    if "name" not in data:
        raise PipelineError(f"{origin}: missing required key 'name' (e.g. name: clickstream)")
    if "database" in data and "schema" in data:
        raise PipelineError(f"{origin}: 'database' and 'schema' are the same setting: keep one")
    if data.get("storage") is not None:
        raise PipelineError(
            f"{origin}: storage={data['storage']!r} is SDP's checkpoint location, which icetide "
            "has no use for: a flow's position is committed with its rows, in the target "
            "table's snapshot summary. Drop 'storage'")
    for key in ("name", "catalog", "database", "schema", "storage"):
        if key in data and data[key] is not None and not isinstance(data[key], str):
            raise PipelineError(f"{origin}: '{key}' must be a string, got {data[key]!r}")
    return PipelineSpec(
        name=cast(str, data["name"]),  # checked above: a string (None: the spec says so)
        path=file.resolve() if file is not None else None,
        catalog=_text(data, "catalog"),
        database=_text(data, "database" if "database" in data else "schema"),
        storage=_text(data, "storage"),
        libraries=_libraries(data.get("libraries"), origin),
        configuration=_configuration(data.get("configuration"), origin),
        sources=_sources(data.get("sources"), origin),
        defaults=_defaults(data.get("defaults"), origin),
        tables=_tables(data.get("tables"), origin),
    )


def _text(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _mapping(value: object, problem: str) -> dict[str, object]:
    """A section of the spec: unset is empty, anything but a mapping is ``problem``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PipelineError(problem)
    return value


def _libraries(value: object, origin: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PipelineError(f"{origin}: 'libraries' must be a list of {{glob: {{include: ...}}}}")
    out = []
    for i, entry in enumerate(value):
        where = f"{origin}: libraries[{i}]"
        if isinstance(entry, str) and entry:
            out.append(entry)
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("glob"), dict):
            raise PipelineError(
                f"{where}: {entry!r} must be {{glob: {{include: 'transformations/**'}}}} "
                "or a path string"
            )
        _check_keys(entry, ("glob",), where)
        _check_keys(entry["glob"], ("include",), f"{where}.glob")
        include = entry["glob"].get("include")
        if not isinstance(include, str) or not include:
            raise PipelineError(f"{where}.glob.include must be a glob string, got {include!r}")
        out.append(include)
    return tuple(out)


def _configuration(value: object, origin: str) -> dict[str, str]:
    """``configuration:``: the pipeline's parameters, read by ``dp.configuration(key)``.
    A ``spark.*`` key is refused: SDP applies it to the pipeline's session, but a run's
    flows share one SparkSession built from icetide.yaml, so it would be ignored."""
    section = _mapping(value, f"{origin}: 'configuration' must be a mapping of key -> value")
    out = {}
    for key, item in section.items():
        if isinstance(key, str) and key.startswith("spark."):
            raise PipelineError(
                f"{origin}: configuration '{key}' is not applied: a run's flows share one "
                "SparkSession, built from icetide.yaml; set it under spark.conf there "
                f"(ICETIDE_SPARK__CONF__... or spark: {{conf: {{{key}: ...}}}}, docs/config.md)")
        if isinstance(item, bool):
            item = "true" if item else "false"
        if not isinstance(key, str) or not isinstance(item, str | int | float):
            raise PipelineError(
                f"{origin}: configuration '{key}': {item!r} must be a string (quote it)"
            )
        out[key] = str(item)
    return out


def _sources(value: object, origin: str) -> dict[str, dict[str, object]]:
    section = _mapping(value, f"{origin}: 'sources' must map a name to {{type: ..., ...}}")
    out = {}
    for name, settings in section.items():
        if not isinstance(settings, dict):
            raise PipelineError(
                f"{origin}: sources.{name} must be a mapping like {{type: kafka, topic: t}}"
            )
        out[str(name)] = dict(settings)
    return out


def _defaults(value: object, origin: str) -> PipelineDefaults:
    if value is None:
        return PipelineDefaults()
    if not isinstance(value, dict):
        raise PipelineError(f"{origin}: 'defaults' must be a mapping, e.g. {{freshness: 1 minute}}")
    _check_keys(value, DEFAULTS_KEYS, f"{origin}: defaults")
    secs = _durations(value, DURATION_DEFAULTS, "defaults", origin)
    if secs["freshness"] and secs["freshness_warn"] and secs["freshness_warn"] >= secs["freshness"]:
        raise PipelineError(
            f"{origin}: defaults.freshness_warn ({secs['freshness_warn']:g}s) must be below "
            f"defaults.freshness ({secs['freshness']:g}s)"
        )
    return PipelineDefaults(**secs, maintenance=_maintenance(value.get("maintenance"), origin))


def _tables(value: object, origin: str) -> dict[str, TableOverride]:
    """``tables:``: ``{name or glob: {freshness: ..., freshness_warn: ...}}``."""
    section = _mapping(value, f"{origin}: 'tables' must map a table name or glob to its "
                              "settings, e.g. {dws.product_views: {freshness: 15 seconds}}")
    out = {}
    for pattern, settings in section.items():
        where = f"{origin}: tables.{pattern}"
        if not isinstance(settings, dict):
            raise PipelineError(f"{where} must be a mapping, e.g. {{freshness: 15 seconds}}")
        _check_keys(settings, TABLE_OVERRIDE_KEYS, where)
        out[str(pattern)] = TableOverride(
            **_durations(settings, TABLE_OVERRIDE_KEYS, f"tables.{pattern}", origin))
    return out


def _durations(section: Mapping[str, object], keys: tuple[str, ...], name: str,
               origin: str) -> dict[str, float | None]:
    """Seconds of ``section``'s duration ``keys`` (unset: ``None``); a bad one raises a
    PipelineError naming ``origin`` and ``<name>.<key>``."""
    try:
        return {k: parse_seconds(section.get(k), f"{name}.{k}") for k in keys}
    except PipelineError as exc:
        raise PipelineError(f"{origin}: {exc}") from None


def _maintenance(value: object, origin: str) -> dict[str, object]:
    """``defaults.maintenance``: keys of the config's ``maintenance:`` section, checked."""
    section = _mapping(value, f"{origin}: defaults.maintenance must be a mapping, e.g. "
                              "{interval: 10 minutes}")
    try:
        MaintenanceConfig().with_overrides(section, "defaults.maintenance")
    except ConfigError as exc:
        raise PipelineError(f"{origin}: {exc}") from None
    return dict(section)
