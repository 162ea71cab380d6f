"""Source types by name: a typed config model and a factory each, imported on first use.

A pipeline's ``sources:`` entry names its ``type``; the registry maps that name to the
module holding the type's ``Config`` (a frozen pydantic model that rejects unknown keys)
and ``build(name, config, settings) -> Source``, and imports it only when a pipeline uses
the type (pyiceberg's catalog registry works the same way). A new source type is one
folder with a ``config.py`` plus one line here.

Secrets never appear in a spec file: a key such as ``password`` is refused with the
``password_env`` form to use instead (the name of an environment variable).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Protocol, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from icetide.config import SECRET_KEYS, Settings
from icetide.config.invalid import validation_message
from icetide.errors import PipelineError
from icetide.model.source import AnySource
from icetide.pipelines.graph import PipelineGraph

#: source type → module with ``Config`` and ``build`` (imported lazily)
SOURCE_TYPES: dict[str, str] = {
    "kafka": "icetide.sources.kafka.config",
    "mysql": "icetide.sources.mysql.config",
    "debezium": "icetide.sources.debezium.config",
}


class SourceConfig(BaseModel):
    """Base of every source type's settings: frozen, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceModule(Protocol):
    """What a source type's ``config`` module provides."""

    Config: type[SourceConfig]
    build: Callable[[str, object, Settings], AnySource]


def source_type(kind: str) -> SourceModule:
    """The module of source type ``kind`` (imported now)."""
    module = SOURCE_TYPES.get(kind)
    if module is None:
        raise PipelineError(
            f"source type {kind!r} is unknown; supported: {', '.join(sorted(SOURCE_TYPES))}")
    return cast(SourceModule, importlib.import_module(module))


def build_source(name: str, cfg: Mapping[str, object], settings: Settings, *,
                 origin: str = "icetide-pipeline.yml") -> AnySource:
    """The source named ``name`` of a pipeline, from its ``sources:`` entry ``cfg``
    (``origin``: the spec file, named in errors)."""
    where = f"{origin}: source {name!r}"
    kind = str(cfg.get("type", ""))
    _refuse_secrets(cfg, where)
    module = source_type(kind)
    try:
        config = module.Config.model_validate({k: v for k, v in cfg.items() if k != "type"})
    except ValidationError as exc:
        raise PipelineError(validation_message(
            exc, f"{origin}: {kind} source {name!r}", allowed=["type", *module.Config.model_fields],
            see="docs/config.md, Pipeline sources", given=cfg)) from None
    return module.build(name, config, settings)


def build_sources(graph: PipelineGraph, settings: Settings) -> dict[str, AnySource]:
    """Every source of a pipeline by name (its ``sources:`` section)."""
    origin = str(graph.spec.path) if graph.spec.path is not None else "icetide-pipeline.yml"
    return {name: build_source(name, cfg, settings, origin=origin)
            for name, cfg in graph.spec.sources.items()}


def _refuse_secrets(cfg: Mapping[str, object], where: str) -> None:
    for key in cfg:
        if str(key).lower() in SECRET_KEYS:
            raise PipelineError(
                f"{where}: '{key}' must not be written in the spec file; put the secret in an "
                f"environment variable and name it instead: {key}_env: SHOP_PASSWORD")
