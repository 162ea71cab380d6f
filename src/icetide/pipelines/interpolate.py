"""``${VAR}`` and ``${VAR:-default}`` in pipeline spec files, from the environment.

A pipeline folder is shared between machines; what differs (a database host and port,
whether the business tables come from CDC) is set per run through the environment::

    configuration:
      clickstream.dims: ${CLICKSTREAM_DIMS:-seed}
    sources:
      shop: {type: mysql, host: "${SHOP_HOST:-127.0.0.1}", port: "${SHOP_PORT:-3306}"}

Only string scalars are expanded (keys are not); ``$${`` is a literal ``${``. A variable
that is unset and has no default is an error naming the file, the variable and the fix.
Secrets do not belong here: mysql sources read them with ``password_env``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar, cast

from icetide.errors import PipelineError

_T = TypeVar("_T")
_REF = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(value: _T, env: Mapping[str, str], origin: str) -> _T:
    """``value`` (parsed YAML) with ``${VAR}`` references in its strings replaced."""
    if isinstance(value, str):
        return cast(_T, _expand(value, env, origin))
    if isinstance(value, dict):
        return cast(_T, {key: interpolate(item, env, origin) for key, item in value.items()})
    if isinstance(value, list):
        return cast(_T, [interpolate(item, env, origin) for item in value])
    return value


def _expand(text: str, env: Mapping[str, str], origin: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped, name, default = match.groups()
        if escaped:
            return match.group(0)[1:]
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise PipelineError(
            f"{origin}: {match.group(0)} refers to environment variable {name}, which is not "
            f"set: export {name}=... or give a default as ${{{name}:-value}}"
        )

    return _REF.sub(replace, text)
