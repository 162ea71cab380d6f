"""The last maintenance pass of a table, as recorded in its table property
``icetide.maintenance-last`` (:attr:`~icetide.model.keys.TableProperties.MAINTENANCE_LAST`).

The maintainer writes it (when it passed, what it did, when orphans were last swept);
the next pass reads when to sweep again, ``icetide status`` when the table was last
maintained. The JSON is a lake format: :meth:`LastPass.dump` writes the text earlier
versions wrote, and :meth:`LastPass.parse` reads any of it (an unreadable value: no pass).
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class LastPass:
    """``at_ms`` (``None``: never), the steps done (sorted), ``orphans_at_ms`` (0: never)."""

    at_ms: int | None = None
    actions: tuple[str, ...] = ()
    orphans_at_ms: int = 0

    @classmethod
    def parse(cls, text: str | None) -> LastPass:
        """The record in ``text`` (absent, not JSON or not an object: no pass recorded)."""
        try:
            value = json.loads(text) if text else {}
        except ValueError:
            return cls()
        if not isinstance(value, dict):
            return cls()
        at, actions, orphans = value.get("at_ms"), value.get("actions"), value.get("orphans_at_ms")
        return cls(
            at_ms=int(at) if isinstance(at, int | float) else None,
            actions=tuple(str(a) for a in actions) if isinstance(actions, list) else (),
            orphans_at_ms=int(orphans) if isinstance(orphans, int | float) else 0)

    def dump(self) -> str:
        """The property's value (keys in the order, and spacing, it has always had)."""
        return json.dumps({"at_ms": self.at_ms, "actions": list(self.actions),
                           "orphans_at_ms": self.orphans_at_ms})
