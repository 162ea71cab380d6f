"""Decode Kafka JSON values into typed Arrow columns inside the reader task (no JVM).

:class:`JsonDecoder` turns a batch of raw Kafka messages (``reader.ARROW_SCHEMA``) into
the declared schema's columns, so Spark never runs ``from_json`` on ordinary records.
Ordinary records take :mod:`.struct_decode` (``msgspec`` into a typed record, only
where that provably gives what the dict path gives); the others go through ``orjson``
dicts, one record at a time. It accepts only what it can prove Spark's ``from_json``
(PERMISSIVE, the options of :mod:`.decode`) would accept *with the same values*;
everything else is **deferred**: the record keeps its raw bytes and
:func:`icetide.sources.kafka.task_decode.finish_decoded` parses it with Spark — valid
after all, or a dead letter with Spark's reason — so what is valid and why cannot drift
from the JVM path. Schemas with types other than ``string``, ``int``, ``bigint`` and
``boolean`` are not decoded here (:meth:`JsonDecoder.for_fields` returns ``None``).
What is accepted and what deferred: docs/architecture.md ("Decoding JSON values").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from icetide.sources.kafka import struct_decode

#: Spark simple type name → Arrow type, for the types decoded in Python.
ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_(),
}
_RANGES = struct_decode.RANGES
#: Columns after the schema's fields (``_deferred``: parse the raw ``_value`` in Spark).
TAIL_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("_topic", pa.string()), ("_partition", pa.int32()), ("_offset", pa.int64()),
    ("_kafka_ts", pa.timestamp("us", tz="UTC")), ("_value", pa.binary()),
    ("_deferred", pa.bool_()),
)
# Field names that appear verbatim in JSON text (no escaping needed).
_PLAIN_NAME = re.compile(r'^[^"\\\x00-\x1f]+$')
_DEFER = object()  # a value Spark might render or judge differently


_FAILED: dict[str, Any] = {}  # shared stand-in for a record orjson cannot decode


def _load(value: bytes | None) -> dict[str, Any]:
    if value is None:
        return _FAILED
    try:
        doc = orjson.loads(value)
    except orjson.JSONDecodeError:
        return _FAILED
    return doc if type(doc) is dict else _FAILED


def _as_string(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    return _DEFER


def _top_level_pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return pairs


@dataclass(frozen=True)
class JsonDecoder:
    """Decodes ``value`` into ``fields`` (name, Spark type) with Spark's semantics."""

    fields: tuple[tuple[str, str], ...]
    required: tuple[str, ...] = ()

    @classmethod
    def for_fields(cls, fields: Sequence[tuple[str, str]],
                   required: Sequence[str] = ()) -> JsonDecoder | None:
        """A decoder, or ``None`` when a field's type or name is not handled here."""
        ok = all(t in ARROW_TYPES and _PLAIN_NAME.match(n) for n, t in fields)
        return cls(tuple(fields), tuple(required)) if ok and fields else None

    def arrow_schema(self) -> pa.Schema:
        """Schema fields, then :data:`TAIL_FIELDS`."""
        return pa.schema([*((n, ARROW_TYPES[t]) for n, t in self.fields), *TAIL_FIELDS])

    def decode(self, raw: pa.RecordBatch) -> pa.RecordBatch:
        """A raw message batch (``key, value, topic, partition, offset, timestamp``) decoded."""
        values = raw.column("value")
        columns, mask = self._columns(values, values.to_pylist())
        for name in self.required:
            mask = pc.or_(mask, pc.is_null(columns[self._index(name)]))
        columns = [pc.if_else(mask, pa.scalar(None, c.type), c) for c in columns]
        kept_raw = pc.if_else(mask, values, pa.scalar(None, pa.binary()))
        stamps = raw.column("timestamp").cast(TAIL_FIELDS[3][1])
        tail = [raw.column("topic"), raw.column("partition"), raw.column("offset"),
                stamps, kept_raw, mask]
        return pa.RecordBatch.from_arrays([*columns, *tail], schema=self.arrow_schema())

    def _columns(self, values: pa.Array, raws: list[bytes | None]
                 ) -> tuple[list[pa.Array], pa.BooleanArray]:
        """The schema's columns and the deferred records: :mod:`.struct_decode` where it
        proves a record ordinary, the dict path for the rest."""
        types = [ARROW_TYPES[t] for _, t in self.fields]
        if not struct_decode.worth_trying(self.fields, types, values, raws):
            return self._dict_columns(raws)
        columns, slow = struct_decode.columns(self.fields, types, values, raws)
        picked = np.flatnonzero(slow.to_numpy(zero_copy_only=False))
        none = pa.array(np.zeros(len(raws), dtype=bool))
        if not len(picked):
            return columns, none
        patches, defer = self._dict_columns([raws[i] for i in picked])
        return ([pc.replace_with_mask(c, slow, p) for c, p in zip(columns, patches, strict=True)],
                pc.replace_with_mask(none, slow, defer))

    def _dict_columns(self, raws: list[bytes | None]) -> tuple[list[pa.Array], pa.BooleanArray]:
        """The schema's columns through ``orjson`` dicts, and the deferred records."""
        docs = [_load(v) for v in raws]
        defer = [d is _FAILED for d in docs]
        self._screen_duplicates(raws, docs, defer)
        columns = [self._column(name, kind, docs, defer) for name, kind in self.fields]
        return columns, pa.array(defer, pa.bool_())

    def _index(self, name: str) -> int:
        return next(i for i, (n, _) in enumerate(self.fields) if n == name)

    def _screen_duplicates(self, raws: list[bytes | None],
                           docs: list[dict[str, Any]], defer: list[bool]) -> None:
        """Defer records where a schema field occurs twice at the top level.

        A record with as many ``:`` as top-level keys in its parsed dict has no duplicate
        key (every key is followed by one colon); only the others are re-read.
        """
        names = {n for n, _ in self.fields}
        for i, doc in enumerate(docs):
            if doc is _FAILED or raws[i].count(b":") == len(doc):  # type: ignore[union-attr]
                continue
            pairs = json.loads(raws[i], object_pairs_hook=_top_level_pairs)  # type: ignore[arg-type]
            keys = [k for k, _ in pairs if k in names]
            if len(keys) != len(set(keys)):
                defer[i] = True

    def _column(self, name: str, kind: str, docs: list[dict[str, Any]],
                defer: list[bool]) -> pa.Array:
        col = [d.get(name) for d in docs]
        ok = {type(None), str} if kind == "string" else {
            type(None), bool if kind == "boolean" else int}
        types = list(map(type, col))
        fix = [] if set(types) <= ok else [i for i, t in enumerate(types) if t not in ok]
        if kind in _RANGES:  # pyarrow checks the range: only an overflow needs a look
            try:
                self._fix(kind, col, fix, defer)
                return pa.array(col, ARROW_TYPES[kind])
            except (pa.ArrowInvalid, OverflowError):
                fix = [i for i, v in enumerate(col) if v is not None]
        self._fix(kind, col, fix, defer)
        return pa.array(col, ARROW_TYPES[kind])

    @classmethod
    def _fix(cls, kind: str, col: list[Any], rows: list[int], defer: list[bool]) -> None:
        for i in rows:
            fixed = cls._convert(kind, col[i])
            if fixed is _DEFER:
                defer[i] = True
                col[i] = None
            else:
                col[i] = fixed

    @staticmethod
    def _convert(kind: str, value: Any) -> Any:
        if kind == "string":
            return value if type(value) is str else _as_string(value)
        if kind == "boolean":
            return value if type(value) is bool else _DEFER
        low, high = _RANGES[kind]
        return value if type(value) is int and low <= value <= high else _DEFER
