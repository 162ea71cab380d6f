"""A predicate on the target's keys implied by the batch, so a MERGE reads few target rows.

A MERGE with a ``WHEN NOT MATCHED`` clause is a right outer join of the target with the
batch: Spark cannot broadcast the (small) batch there, so every target row is shuffled
and sorted for a sort-merge join — the MERGE grows with the table, not with the batch.
Adding ``t.k IN (<the batch's values of k>)`` (or ``t.k BETWEEN <min> AND <max>`` for a
large batch) to the ``ON`` condition changes no match — every target row that equals a
batch row on the keys satisfies it — but Spark pushes it below the join into the target
scan: rows are filtered before the shuffle, and Iceberg prunes files by partition
(``bucket``) and column statistics.

Only key types whose SQL literals are exact are used (integers, strings, decimals,
dates) and only when the batch column has the target column's type; otherwise no
predicate is added (the MERGE stays correct, just not faster).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from icetide.tables.sql import quote_ident as q
from icetide.tables.sql import sql_and, sql_string

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

#: Up to this many batch rows, the exact key values are listed (``IN``); above, a range.
#: A listed key costs the MERGE more than a key in a range (the list is evaluated and
#: shipped with every task), a range prunes only keys that sit together: with updates
#: spread over a 1 M-row table, listing won up to 1,000 keys and lost at 10,000 (the
#: crossover near 5,000; docs/benchmarks.md, "CDC batches by key filter").
IN_LIST_LIMIT = 4_000
#: A key value this filter can write as a literal (ints, strings, decimals, dates).
KeyValue = int | str | Decimal | date
_INT_SUFFIX = {"tinyint": "Y", "smallint": "S", "int": "", "bigint": "L"}


def literal(value: object, type_name: str) -> str | None:
    """An exact Spark SQL literal of ``value`` for a column of ``type_name``
    (``DataType.simpleString()``), or ``None`` when the type is not supported."""
    if type_name in _INT_SUFFIX and isinstance(value, int) and not isinstance(value, bool):
        return f"{value}{_INT_SUFFIX[type_name]}"
    if type_name == "string" and isinstance(value, str):
        return sql_string(value)
    if type_name.startswith("decimal(") and isinstance(value, Decimal) and value.is_finite():
        return f"CAST('{value:f}' AS {type_name.upper()})"
    if type_name == "date" and isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    return None


def supported(type_name: str) -> bool:
    return (type_name in _INT_SUFFIX or type_name == "string" or type_name == "date"
            or type_name.startswith("decimal("))


def in_sql(column: str, values: Iterable[KeyValue | None], type_name: str) -> str | None:
    """``t.<column> IN (...)`` over the non-null ``values`` (sorted, distinct)."""
    items = sorted({v for v in values if v is not None})
    rendered = [literal(v, type_name) for v in items]
    if not rendered or any(r is None for r in rendered):
        return None
    return f"t.{q(column)} IN ({', '.join(str(r) for r in rendered)})"


def range_sql(column: str, low: object, high: object, type_name: str) -> str | None:
    """``t.<column> BETWEEN low AND high`` (``None`` when a bound is missing)."""
    lo, hi = literal(low, type_name), literal(high, type_name)
    if lo is None or hi is None:
        return None
    return f"t.{q(column)} BETWEEN {lo} AND {hi}"


@dataclass(frozen=True)
class KeyProbe:
    """What one look at a batch found: its rows, the predicate on ``t.<keys>`` they imply
    (``None`` when no key column allows one, or the batch is empty) and how many rows have
    the ``flag`` column true (0 without one)."""

    rows: int
    predicate: str | None
    flagged: int = 0


def probe_keys(batch: DataFrame, keys: Sequence[str], target_types: Mapping[str, str],
               limit: int | None = None, *, flag: str | None = None) -> KeyProbe:
    """Count ``batch`` and derive its key predicate: one Spark job when the batch has at
    most ``limit`` rows (default :data:`IN_LIST_LIMIT`).

    That job brings at most ``limit + 1`` rows' key values to the driver (each partition
    stops there, one task gathers them); within the limit they are counted and listed
    there. A larger batch costs a second job for its count and each key's range.
    ``flag`` names a boolean column whose true rows are counted too (the MERGE sink's
    retraction flag). The count doubles as the sink's emptiness check.

    ``batch`` should be cached: it is read once more.
    """
    batch_types = {f.name: f.dataType.simpleString() for f in batch.schema.fields}
    usable = [k for k in keys if supported(target_types.get(k, ""))
              and batch_types.get(k) == target_types[k]]
    cap = IN_LIST_LIMIT if limit is None else limit
    values = _first_rows(batch, [*usable, *([flag] if flag else [])], cap + 1)
    if len(values) > cap:
        return _aggregated(batch, usable, target_types, flag)
    flagged = sum(1 for r in values if r[len(usable)]) if flag else 0
    return KeyProbe(len(values), _listed(usable, values, target_types) if usable else None,
                    flagged)


def _first_rows(batch: DataFrame, columns: Sequence[str], n: int) -> list[Row]:
    """Up to ``n`` rows of ``columns`` in one job: the batch's partitions read one after
    the other by one task, which stops at the ``n``-th row (``take`` on one partition).

    A plain ``take`` scans one partition, then more in further jobs. A limit inside the
    plan (``limit(n).coalesce(1)``) is generated Java code whose counter Spark names
    uniquely per plan (``BaseLimitExec.newLimitCountTerm``): no two batches' plans are
    the same code, so each was compiled by Janino and then by the JIT anew — most of the
    generated classes of a running pipeline (docs/benchmarks.md, where a batch's fixed
    cost goes)."""
    from pyspark.sql import functions as F

    picked = [F.col(q(c)) for c in columns] or [F.lit(1)]
    return batch.select(*picked).coalesce(1).take(n)


def _all_of(parts: Sequence[str | None]) -> str | None:
    """The conjunction of the predicates that could be written (``None``: none could)."""
    present = [p for p in parts if p is not None]
    return sql_and(*present) if present else None


def _listed(usable: Sequence[str], values: Sequence[Row],
            target_types: Mapping[str, str]) -> str | None:
    """``t.k IN (...)`` for every usable key over the collected ``values``."""
    if not values:
        return None
    return _all_of([in_sql(k, (r[i] for r in values), target_types[k])
                    for i, k in enumerate(usable)])


def _aggregated(batch: DataFrame, usable: Sequence[str], target_types: Mapping[str, str],
                flag: str | None) -> KeyProbe:
    """Count, key ranges and flagged rows of a batch past the IN-list limit, in one job."""
    from pyspark.sql import functions as F

    stats = batch.agg(F.count(F.lit(1)).alias("n"),
                      *[F.min(q(k)).alias(f"lo{i}") for i, k in enumerate(usable)],
                      *[F.max(q(k)).alias(f"hi{i}") for i, k in enumerate(usable)],
                      *([F.count_if(F.col(q(flag))).alias("f")] if flag else [])).first()
    assert stats is not None
    flagged = int(stats["f"]) if flag else 0
    return KeyProbe(int(stats["n"]), _all_of([range_sql(k, stats[f"lo{i}"], stats[f"hi{i}"],
                                                        target_types[k])
                                              for i, k in enumerate(usable)]), flagged)
