"""A MERGE's result written as the table's whole new contents (pure SQL generation).

For a small copy-on-write table a MERGE rewrites every data file anyway (its one or two
files hold a row of nearly every key a batch brings); writing the table's new contents
instead costs one Spark job and one commit, where the MERGE costs its planning, a job
to find the files it rewrites, its write and, after it, a job counting its changes
(docs/benchmarks.md, "Where a batch's fixed cost goes"). The new contents are the two
parts of :func:`rewrite_parts`, both read as of one snapshot of the target:

* ``changed``: per collapsed key of the batch, the row the MERGE leaves (``AFTER`` of
  :func:`~icetide.tables.changelog.images_sql`, NULL when it deletes the key), with the
  row stored before (``before``) to count inserts, updates and deletes from;
* ``kept``: the stored rows whose key the batch does not touch, as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from icetide.tables.changelog import images_sql, version_suffix
from icetide.tables.merge_sql import EngineLike, MergeSpec
from icetide.tables.sql import quote_ident as q
from icetide.tables.sql import quote_qualified, sql_and


@dataclass(frozen=True)
class RewriteParts:
    """The SELECTs whose rows together are the table's new contents."""

    #: key columns, ``before`` and ``after`` per collapsed key (see the module docstring)
    changed: str
    #: the stored rows no batch key touches, in the table's columns
    kept: str


def rewrite_parts(engine: EngineLike, spec: MergeSpec, column_types: Mapping[str, str], *,
                  collapsed_view: str, as_of: int | None) -> RewriteParts:
    """The two parts of the target's contents after merging ``collapsed_view`` into it
    with ``engine``, both reading the target as of snapshot ``as_of`` (``None``: a table
    with no snapshot yet)."""
    types = {c: column_types[c] for c in spec.columns}
    on = sql_and(*[f"t.{q(k)} = s.{q(k)}" for k in spec.keys])
    stored = ", ".join(f"t.{q(c)} AS {q(c)}" for c in spec.columns)
    kept = (f"SELECT {stored}\nFROM {spec.target}{version_suffix(as_of)} AS t\n"
            f"LEFT ANTI JOIN {quote_qualified(collapsed_view)} AS s ON {on}")
    changed = images_sql(engine, spec, types, collapsed_view, None, as_of)
    return RewriteParts(changed=changed, kept=kept)
