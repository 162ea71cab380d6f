"""Named files and folders below an object's own folder, declared once each.

``log = Below("metastore.log")`` in a class whose instances have a ``root`` folder reads
as ``root / "metastore.log"``: the metastore's, the embedded servers' files are each one
line instead of a property each.
"""

from __future__ import annotations

from pathlib import Path
from typing import overload


class Below:
    """A read-only attribute: the path ``name`` below the folder in the owner's attribute
    ``root`` (a ``Path``)."""

    def __init__(self, name: str, root: str = "root") -> None:
        self.name = name
        self.root = root

    @overload
    def __get__(self, obj: None, owner: type) -> Below: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Path: ...

    def __get__(self, obj: object | None, owner: type) -> Below | Path:
        if obj is None:
            return self
        folder: Path = getattr(obj, self.root)
        return folder / self.name
