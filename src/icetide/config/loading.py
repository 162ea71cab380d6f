"""Loading: ``icetide.yaml`` → the ``ICETIDE_<SECTION>__<KEY>`` overlay → :class:`Settings`,
with secrets refused in YAML and errors that name the file, the key and the value."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

import yaml
from pydantic import ValidationError

from icetide.config.invalid import Loc, dotted, validation_message
from icetide.config.sections import Settings
from icetide.errors import ConfigError

ENV_PREFIX = "ICETIDE_"
DEFAULT_CONFIG_FILE = "icetide.yaml"
# Keys that may only come from the environment.
SECRET_KEYS = frozenset({"password", "token", "credential", "secret"})
#: Kafka client properties (librdkafka names, with dots) under this prefix.
KAFKA_PROPS = "kafka.properties."


def _is_secret(dotted: str) -> bool:
    """A secret key: ``password``, ``token``…; under ``kafka.properties`` also a client
    property whose name has such a part (``sasl.password``, ``ssl.key.password``)."""
    key = dotted.rsplit(".", 1)[-1].lower() if not dotted.startswith(KAFKA_PROPS) else ""
    if key in SECRET_KEYS:
        return True
    if dotted.startswith(KAFKA_PROPS):
        parts = re.split(r"[._-]", dotted[len(KAFKA_PROPS):].lower())
        return any(p in SECRET_KEYS for p in parts)
    return False


def env_name(dotted: str) -> str:
    """The environment variable of a setting (``kafka.properties.sasl.password`` →
    ``ICETIDE_KAFKA__PROPERTIES__SASL_PASSWORD``)."""
    if dotted.startswith(KAFKA_PROPS):
        prop = dotted[len(KAFKA_PROPS):]
        return f"{ENV_PREFIX}KAFKA__PROPERTIES__{prop.upper().replace('.', '_')}"
    return ENV_PREFIX + dotted.upper().replace(".", "__")


def _reject_secrets_in_yaml(data: Mapping[str, object], source: str, prefix: str = "") -> None:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _reject_secrets_in_yaml(value, source, dotted + ".")
        elif _is_secret(dotted):
            raise ConfigError(
                f"{source}: secret key '{dotted}' must not be written in YAML; "
                f"remove it and set the environment variable {env_name(dotted)} instead"
            )


def env_overlay(environ: Mapping[str, str]) -> dict[str, object]:
    """Turn ``ICETIDE_<SECTION>__<KEY>=v`` variables into a nested dict (``ICETIDE_HOME`` too)."""
    out: dict[str, object] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
        if path == ["home"]:
            out["home"] = value
            continue
        if len(path) < 2 or not all(path):
            _check_not_a_misspelt_setting(name, path)
            continue  # e.g. ICETIDE_CONFIG: not a setting
        if path[:2] == ["kafka", "properties"] and len(path) == 3:
            path[2] = path[2].replace("_", ".")  # librdkafka names: sasl.password
        node = out
        for part in path[:-1]:
            node = cast("dict[str, object]", node.setdefault(part, {}))
        node[path[-1]] = value
    return out


#: variables earlier versions read, and what replaced them
_RETIRED = {"ICETIDE_JAR_CACHE": "ICETIDE_JARS__CACHE (jars.cache)"}


def _check_not_a_misspelt_setting(name: str, path: list[str]) -> None:
    """``ICETIDE_KAFKA_BOOTSTRAP`` or ``ICETIDE_SQL_SERVER_PASSWORD`` (one underscore before
    the key) would be ignored silently: refuse it."""
    if name in _RETIRED:
        raise ConfigError(f"environment variable {name} is no longer read: set {_RETIRED[name]}")
    if len(path) != 1:
        return
    for section in Settings.model_fields:
        key = path[0].removeprefix(f"{section}_")
        if key and key != path[0]:
            raise ConfigError(
                f"environment variable {name} is not read: settings take two underscores "
                f"between section and key, e.g. {ENV_PREFIX}{section.upper()}__{key.upper()}"
            )


def _deep_merge(base: dict[str, object], over: Mapping[str, object]) -> dict[str, object]:
    merged = dict(base)
    for key, value in over.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = _deep_merge(dict(current), value)
        else:
            merged[key] = value
    return merged


def _from_env(overlay: Mapping[str, object], loc: Loc) -> bool:
    node: object = overlay
    for part in loc:
        if not isinstance(node, Mapping) or str(part) not in node:
            return False
        node = node[str(part)]
    return True


def _key_name(overlay: Mapping[str, object] | None) -> Callable[[Loc], str]:
    """How a bad key is named: its environment variable when the overlay set it."""
    def name(loc: Loc) -> str:
        if overlay and _from_env(overlay, loc):
            return ENV_PREFIX + "__".join(str(p).upper() for p in loc)
        return dotted(loc)
    return name


def load_settings(
    path: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Load settings: YAML file (if any) → env overlay → validated frozen model.

    ``path`` defaults to ``$ICETIDE_CONFIG`` or ``./icetide.yaml`` when it exists.
    """
    environ = os.environ if environ is None else environ
    explicit = path is not None or "ICETIDE_CONFIG" in environ
    cfg_path = Path(path or environ.get("ICETIDE_CONFIG", DEFAULT_CONFIG_FILE))
    data: dict[str, object] = {}
    source = str(cfg_path)
    if cfg_path.exists():
        try:
            loaded = yaml.safe_load(cfg_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{source}: expected a mapping at the top level, got {loaded!r}")
        _reject_secrets_in_yaml(loaded, source)
        data = loaded
    elif explicit:
        raise ConfigError(f"config file {source} does not exist: create it or unset ICETIDE_CONFIG")
    overlay = env_overlay(environ)
    merged = _deep_merge(data, overlay)
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        where = source if data else "environment"
        if overlay and data:
            where = f"{source} + ICETIDE_* environment"
        raise ConfigError(validation_message(exc, where, key=_key_name(overlay),
                                             see="docs/config.md", given=merged)) from None
