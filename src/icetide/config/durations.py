"""Durations in the configuration and the pipeline specs: ``"500ms"``, ``"10s"``,
``"2 minutes"``, ``"1h"`` or a number of seconds."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

from icetide.errors import ConfigError

_DURATION_RE = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)?\s*$"
)
_UNIT_SECONDS = {
    None: 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 0.001, "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
}


def parse_duration(value: str | float | int) -> float:
    """Parse ``"2 minutes"``, ``"500ms"``, ``"10s"`` or a number of seconds into seconds."""
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION_RE.match(value)
    if not match:
        raise ConfigError(
            f"invalid duration {value!r}: use a number with a unit, e.g. '500ms', '10s', "
            "'2 minutes', '1h'"
        )
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _to_seconds(value: object) -> object:
    """The validator of :data:`Duration`: a duration as :func:`parse_duration` reads it."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid duration {value!r}: write e.g. '10 seconds' or '2 minutes'")
    try:
        return parse_duration(value)
    except ConfigError as exc:  # as ValueError, so pydantic's message names the key
        raise ValueError(str(exc)) from None


#: Seconds, written as a number or ``"500ms"``, ``"10s"``, ``"2 minutes"``, ``"1h"``: the
#: one duration type of the configuration and the pipeline specs.
Duration = Annotated[float, BeforeValidator(_to_seconds)]
