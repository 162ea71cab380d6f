"""The JSON value type, named once: what ``json.loads`` returns and ``json.dumps`` takes.

Markers, positions, Debezium envelopes, status documents and the dashboard's feeds are
JSON; code that builds or reads them says so with these names instead of ``Any``.
"""

from __future__ import annotations

from typing import TypeAlias

#: One JSON value: a scalar, an array or an object, nested to any depth.
JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
#: A JSON object (``{...}``).
JsonObject: TypeAlias = dict[str, JsonValue]
