"""A source's key in a flow's positions: ``<kind>:<name>``, built and read only here.

Markers store a flow's positions as JSON ``{source key: position}`` in the target's
snapshot summary, so the text of a key is a lake format: ``kafka:<topic>``,
``iceberg:<catalog.db.table>``, ``hudi:<catalog.db.table>`` (a Hudi table streamed by
a flow), ``mysql:<source>`` (a declared database) and
``mysql:<source>:<db.table or pattern>`` (the reader a CDC flow follows it with),
``debezium:<name>``, ``refresh:<catalog.db.view>`` (a materialized view's inputs). A
:class:`SourceKey` formats to exactly that text and parses it back; everything that
builds or splits a key (sources, lag probes, the dashboard's DAG, maintenance's
retention floor, table refresh) goes through it. Readers of the lake use
:meth:`SourceKey.read`, which passes over a key icetide did not write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from icetide.errors import SourceError

__all__ = ["SourceKey"]


@dataclass(frozen=True)
class SourceKey:
    """``kind`` (``kafka``, ``iceberg``...) and ``name`` (everything after the first ``:``)."""

    kind: str
    name: str

    KAFKA: ClassVar[str] = "kafka"
    ICEBERG: ClassVar[str] = "iceberg"
    HUDI: ClassVar[str] = "hudi"
    MYSQL: ClassVar[str] = "mysql"
    DEBEZIUM: ClassVar[str] = "debezium"
    REFRESH: ClassVar[str] = "refresh"

    def __post_init__(self) -> None:
        if not self.kind or ":" in self.kind or not self.name:
            raise SourceError(f"source key {self.kind!r}:{self.name!r} is not a key: both parts "
                              "must be non-empty, the kind without ':' (e.g. 'kafka:clicks')")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> SourceKey:
        """``"kafka:clicks"`` → ``SourceKey("kafka", "clicks")``; ``str()`` gives it back."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise SourceError(f"source key {text!r} is not '<kind>:<name>' (e.g. 'kafka:clicks', "
                              "'iceberg:lake.db.table'): it was not written by icetide")
        return cls(kind, name)

    @classmethod
    def read(cls, text: str) -> SourceKey | None:
        """The key of a marker's position; ``None`` for one icetide did not write (a
        marker committed by hand or by a test): readers of the lake skip those."""
        try:
            return cls.parse(text)
        except SourceError:
            return None

    @classmethod
    def kind_of(cls, text: str) -> str | None:
        """The kind of key ``text`` (``None``: not a key, see :meth:`read`)."""
        key = cls.read(text)
        return key.kind if key is not None else None

    @classmethod
    def kafka(cls, topic: str) -> SourceKey:
        return cls(cls.KAFKA, topic)

    @classmethod
    def iceberg(cls, ident: str) -> SourceKey:
        """A lake table's key: ``ident`` is ``catalog.db.table``."""
        return cls(cls.ICEBERG, ident)

    @classmethod
    def hudi(cls, ident: str) -> SourceKey:
        """A Hudi table's key (sources/hudi.py): ``ident`` is ``catalog.db.table``."""
        return cls(cls.HUDI, ident)

    def table(self, catalog: str) -> str:
        """A lake table's name below ``catalog`` (``iceberg:lake.db.t`` → ``db.t``); a name
        in another catalog stays whole."""
        head, _, rest = self.name.partition(".")
        return rest if head == catalog and rest else self.name

    @property
    def declared(self) -> SourceKey:
        """The key of the declared source a followed reader belongs to
        (``mysql:shop:db.t`` → ``mysql:shop``; a declared source's own key: itself)."""
        return SourceKey(self.kind, self.name.partition(":")[0])

    @property
    def followed(self) -> str:
        """The tables a followed reader reads (``mysql:shop:db.t`` → ``db.t``; else ``""``)."""
        return self.name.partition(":")[2]
