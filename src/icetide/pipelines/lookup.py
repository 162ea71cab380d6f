"""``dp.lookup_join``: enrich a batch with a dimension's current rows, by key.

Seed 001 looks products up ``FOR SYSTEM_TIME AS OF proctime``: each click takes the
product's row as the dimension holds it when the click is processed. A query function
writes that as::

    clicks = kafka.read("clicks", schema=...)
    return dp.lookup_join(clicks, "dim_db.products", on="productId",
                          columns=["name", "product_price"])

What the join costs depends on the dimension's size, which only the running engine
knows, so this module holds the request (:class:`LookupSpec`) and a run-time hook
(:func:`set_lookup_joiner`), like ``dp.read``: while flows run, the engine joins a small
dimension as a broadcast of its cached rows and a large one without broadcasting it
(:mod:`icetide.lake.lookups`). With no hook installed (a dry run, a test with its own
reader) the lookup is a plain join with ``dp.read(name)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from icetide.errors import PipelineError
from icetide.pipelines.reader import read

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The joins a lookup can be: every input row kept (``left``, unknown keys get nulls), or
#: only the rows whose key the dimension holds (``inner``).
HOWS = ("left", "inner")


@dataclass(frozen=True)
class LookupSpec:
    """One lookup: the key columns (named alike on both sides), the dimension's columns
    to add (None: all of them) and the kind of join."""

    keys: tuple[str, ...]
    columns: tuple[str, ...] | None = None
    how: Literal["left", "inner"] = "left"

    def dimension_columns(self, available: Sequence[str]) -> list[str]:
        """The dimension's columns the join reads: the keys, then the wanted ones."""
        wanted = list(available) if self.columns is None else list(self.columns)
        missing = [c for c in (*self.keys, *wanted) if c not in available]
        if missing:
            raise PipelineError(
                f"dp.lookup_join: the dimension has no column {', '.join(missing)} "
                f"(it has {', '.join(available)}): name columns it holds in on= and columns=")
        return [*self.keys, *(c for c in wanted if c not in self.keys)]

    def join(self, left: DataFrame, dim: DataFrame, hint: str | None = None) -> DataFrame:
        """``left`` joined with ``dim``'s wanted columns as this lookup asks; ``hint``: a
        join strategy for the dimension's side (``broadcast``, ``merge``)."""
        picked = dim.select(*self.dimension_columns(dim.columns))
        return left.join(picked if hint is None else picked.hint(hint), list(self.keys),
                         self.how)


#: The run-time hook behind :func:`lookup_join`: ``(left, table name, spec) -> DataFrame``.
LookupJoiner = Callable[["DataFrame", str, LookupSpec], "DataFrame"]

_joiner: LookupJoiner | None = None


def set_lookup_joiner(joiner: LookupJoiner | None) -> LookupJoiner | None:
    """Install the run-time hook behind :func:`lookup_join`; returns the previous one."""
    global _joiner
    previous, _joiner = _joiner, joiner
    return previous


def _spec(on: str | Sequence[str], columns: Sequence[str] | None, how: str) -> LookupSpec:
    keys = (on,) if isinstance(on, str) else tuple(on)
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise PipelineError(f"dp.lookup_join: on={on!r} must name the key column(s), "
                            "e.g. on='productId' or on=['shop', 'productId']")
    if how not in HOWS:
        raise PipelineError(f"dp.lookup_join: how={how!r} is not a lookup; use 'left' (keep "
                            "every row, nulls for unknown keys) or 'inner' (only known keys)")
    if isinstance(columns, str):
        columns = [columns]
    return LookupSpec(keys, None if columns is None else tuple(columns), how)  # type: ignore[arg-type]


def lookup_join(left: DataFrame, name: str, *, on: str | Sequence[str],
                columns: Sequence[str] | None = None, how: str = "left") -> DataFrame:
    """``left`` joined with the current rows of dimension table ``name`` on key(s) ``on``
    (columns named alike on both sides), adding the dimension's ``columns`` (default:
    all); ``how``: ``left`` keeps every row of ``left``, ``inner`` only known keys."""
    spec = _spec(on, columns, how)
    joiner = _joiner
    if joiner is not None:
        return joiner(left, name, spec)
    return spec.join(left, read(name))
