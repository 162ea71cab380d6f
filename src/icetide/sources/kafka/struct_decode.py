"""The fast path of :class:`~icetide.sources.kafka.arrow_decode.JsonDecoder`: ``msgspec``.

``msgspec`` decodes a value straight into a typed record (no dict, no per-field type
checks in Python), which costs less CPU than the dict path. It takes a record only when
it can prove the dict path would take it with the same values:

* ``msgspec`` decoded it: a JSON object with valid UTF-8, no ``NaN`` or trailing text,
  whose schema fields have exactly the declared type (a string in a ``string`` field, an
  in-range integer in an ``int``/``bigint`` field, ``true``/``false`` in a ``boolean``
  one) or are ``null``/absent;
* and its value holds exactly as many ``:`` as it has non-null schema fields. Every
  top-level pair has a colon, so the record has no other key (whose value ``msgspec``
  skips without the checks ``orjson`` makes), no field twice, and no explicit ``null``.

Every other record is *slow*: :class:`JsonDecoder` runs its dict path on those alone, so
what is valid, deferred or converted (an integer into a ``string`` field) stays what
it was. When most records of a batch are slow (a topic whose events carry fields the
schema leaves out), :func:`worth_trying` says so on a sample and the batch skips this path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache, reduce
from operator import attrgetter
from typing import Annotated, Any, Optional

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

#: Spark's integer types and their ranges (the dict path checks the same ones).
RANGES: dict[str, tuple[int, int]] = {"int": (-(2**31), 2**31 - 1),
                                      "bigint": (-(2**63), 2**63 - 1)}
#: Spark simple type name → the type ``msgspec`` checks.
_TYPES: dict[str, object] = {
    "string": str, "boolean": bool,
    **{kind: Annotated[int, msgspec.Meta(ge=low, le=high)]
       for kind, (low, high) in RANGES.items()},
}
SAMPLE = 64  # records :func:`worth_trying` decodes to judge a batch
Fields = tuple[tuple[str, str], ...]


@lru_cache(maxsize=64)
def _decoder(fields: Fields) -> tuple[Callable[[bytes | None], Any], object]:
    """A per-record decode (a shared empty record when ``msgspec`` refuses the value) and
    that empty record. Attributes are ``f0, f1, ...``, renamed to the field names."""
    record = msgspec.defstruct(
        "Record", [(f"f{i}", Optional[_TYPES[kind]], None)  # noqa: UP045 (a runtime type)
                   for i, (_, kind) in enumerate(fields)],
        rename={f"f{i}": name for i, (name, _) in enumerate(fields)})
    decode = msgspec.json.Decoder(record).decode
    empty = record()

    def one(value: bytes | None) -> Any:
        try:
            return decode(value)  # type: ignore[arg-type]  # None: TypeError, refused
        except (msgspec.DecodeError, UnicodeDecodeError, TypeError):
            return empty

    return one, empty


def columns(fields: Fields, types: Sequence[pa.DataType], values: pa.Array,
            raws: list[bytes | None]) -> tuple[list[pa.Array], pa.BooleanArray]:
    """The schema's columns (``types``, in ``fields`` order) of ``raws`` (the Python list of
    ``values``), and which records are slow; a slow record's values here are null."""
    one, empty = _decoder(fields)
    records = list(map(one, raws))
    cols = [pa.array(list(map(attrgetter(f"f{i}"), records)), kind)
            for i, kind in enumerate(types)]
    present = reduce(pc.add, [pc.cast(pc.is_valid(c), pa.int64()) for c in cols])
    colons = pc.count_substring(values, ":")
    refused = pa.array([r is empty for r in records], pa.bool_())
    slow = pc.or_(pc.fill_null(pc.not_equal(colons, present), True), refused)
    return cols, slow


def worth_trying(fields: Fields, types: Sequence[pa.DataType], values: pa.Array,
                 raws: list[bytes | None]) -> bool:
    """Whether at most half of the first :data:`SAMPLE` records are slow."""
    head = raws[:SAMPLE]
    if not head:
        return False
    _, slow = columns(fields, types, values.slice(0, len(head)), head)
    return 2 * int(pc.sum(slow).as_py()) <= len(head)
