"""Change records and their reduction to one row per key (pure).

A :class:`Change` is one row change from the binlog (``c``/``u``/``d``) or one row of
the snapshot (``r``), in the source's order, with ``seq`` (see
:func:`icetide.sources.mysql.position.sequence`) ordering every version of a key.

:func:`collapse` keeps, per primary key, only the last change in binlog order. An
update that changes the key becomes a delete of the old key followed by an upsert of
the new key. Deletes are never dropped, even after an insert in the same batch: after
a resumed snapshot the target may already hold the key (see ``position.py``).

:func:`to_rows` turns changes into tuples in the table's column order plus the metadata
columns ``_op`` (``r``/``c``/``u``/``d``), ``_pos`` (decimal(38,0) sequence) and ``_ts``
(commit time, timezone-aware UTC). A delete row carries the row's last values.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from icetide.cdc.schema import TableSchema
from icetide.errors import SchemaChangeError
from icetide.sources.mysql.conn import Row
from icetide.sources.mysql.schema import converters_of

Op = Literal["r", "c", "u", "d"]
META_COLUMNS = (("_op", "string"), ("_pos", "decimal(38,0)"), ("_ts", "timestamp"))


#: One row image: column name → the server's value.
Image = dict[str, object]


@dataclass(frozen=True)
class Change:
    """One row change of ``table`` (``db.table``)."""

    table: str
    op: Op
    before: Image | None
    after: Image | None
    seq: int
    ts: int  # commit time, epoch seconds

    @property
    def image(self) -> Image:
        """The row's values after the change (the before image for a delete)."""
        row = self.before if self.op == "d" else self.after
        assert row is not None, f"change {self.op} of {self.table} without a row image"
        return row


def _key(row: Image, key: Sequence[str]) -> Row:
    return (row.get(key[0]),) if len(key) == 1 else tuple([row.get(k) for k in key])


def split_key_updates(changes: Iterable[Change], key: Sequence[str]) -> list[Change]:
    """Replace every key-changing update by delete(old key) + insert(new key)."""
    out: list[Change] = []
    for ch in changes:
        if ch.op == "u" and ch.before is not None and ch.after is not None \
                and _key(ch.before, key) != _key(ch.after, key):
            out.append(Change(ch.table, "d", ch.before, None, ch.seq, ch.ts))
            out.append(Change(ch.table, "c", None, ch.after, ch.seq, ch.ts))
        else:
            out.append(ch)
    return out


def collapse(changes: Iterable[Change], key: Sequence[str]) -> list[Change]:
    """The last change per key, in the order of those last changes."""
    last: dict[Row, Change] = {}
    for ch in split_key_updates(changes, key):
        k = _key(ch.image, key)
        last.pop(k, None)  # re-insert so dict order follows the last change
        last[k] = ch
    return list(last.values())


def _check_columns(schema: TableSchema, row: Image, seq: int) -> None:
    unknown = set(row) - set(schema.names)
    if unknown:
        raise SchemaChangeError(
            f"binlog row of {schema.qualified} at sequence {seq} has columns "
            f"{sorted(unknown)} that the table schema {list(schema.names)} lacks: the schema "
            "changed more than once since this position; re-snapshot the table with "
            f"`icetide cdc resnapshot {schema.qualified}`"
        )


def to_rows(changes: Iterable[Change], schema: TableSchema) -> list[Row]:
    """Spark-ready tuples: the schema's columns (converted), then ``_op, _pos, _ts``.

    Columns missing from a binlog row (added later) are null; unknown columns raise
    :class:`SchemaChangeError`.
    """
    pairs = list(zip(converters_of(schema), schema.names, strict=True))
    expected = set(schema.names)
    stamps: dict[int, dt.datetime] = {}
    out = []
    for ch in changes:
        row = ch.image
        if row.keys() != expected:
            _check_columns(schema, row, ch.seq)
        stamp = stamps.get(ch.ts)
        if stamp is None:
            stamp = stamps[ch.ts] = dt.datetime.fromtimestamp(ch.ts, dt.UTC)
        out.append((*[f(row.get(n)) for f, n in pairs], ch.op, Decimal(ch.seq), stamp))
    return out


def snapshot_rows(
    schema: TableSchema, rows: Iterable[Sequence[object]], seq: int, ts: int
) -> list[Row]:
    """Snapshot rows (tuples in column order) as Spark-ready ``r`` rows stamped with the
    sequence and time of the view they were read from (same shape as :func:`to_rows`)."""
    convert = converters_of(schema)
    meta = ("r", Decimal(seq), dt.datetime.fromtimestamp(ts, dt.UTC))
    return [(*(f(v) for f, v in zip(convert, r, strict=True)), *meta) for r in rows]
