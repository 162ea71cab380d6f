"""CREATE TABLE statements for Iceberg tables (pure SQL generation, no JVM).

Conventions (../shared/DESIGN.md):
* append tables (facts, dead letters, changelogs): format v2, fanout writes, partitioned
  by an Iceberg transform such as ``days(eventTime)``; row-level changes merge-on-read,
  so an erase or a correction writes position deletes instead of rewriting whole files;
* primary-key tables: format v2 (v3 by property), merge-on-read for delete/update/merge,
  ``bucket(N, key)`` partitioning, identifier fields = key (set after creation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from icetide.errors import TableError
from icetide.tables.sql import quote_ident, quote_qualified, sql_string

APPEND_TABLE_PROPERTIES: Mapping[str, str] = {
    "format-version": "2",
    "write.spark.fanout.enabled": "true",
    "write.distribution-mode": "none",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
}

PRIMARY_KEY_TABLE_PROPERTIES: Mapping[str, str] = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
}


def create_table_sql(
    ident: str,
    columns: Sequence[tuple[str, str]],
    *,
    partition_sql: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    comment: str | None = None,
) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``catalog.db.table``.

    ``partition_sql`` are rendered Iceberg transforms (``days(`ts`)``, see
    :meth:`icetide.pipelines.PartitionField.to_sql`); ``columns`` are (name, type SQL).
    """
    if not columns:
        raise TableError(f"cannot create {ident}: no columns")
    cols = ",\n  ".join(f"{quote_ident(name)} {type_sql}" for name, type_sql in columns)
    head = f"CREATE TABLE IF NOT EXISTS {quote_qualified(ident)}"
    parts = [f"{head} (\n  {cols}\n) USING iceberg"]
    if partition_sql:
        parts.append("PARTITIONED BY (" + ", ".join(partition_sql) + ")")
    if comment:
        parts.append("COMMENT " + sql_string(comment))
    if properties:
        props = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in sorted(properties.items()))
        parts.append(f"TBLPROPERTIES ({props})")
    return "\n".join(parts)


def write_order_sql(ident: str, columns: Sequence[str]) -> str:
    """``ALTER TABLE … WRITE LOCALLY ORDERED BY …``: the table's sort order (``cluster_by``).

    *Locally*: each write task sorts its rows before writing them, so every data file
    comes out sorted, and the write distribution stays as it was (``WRITE ORDERED BY``
    would set ``write.distribution-mode=range``: a range shuffle, with its sampling job,
    in every batch of a streaming flow). Compaction then sorts across files by the same
    order (``rewrite_data_files`` strategy ``sort``, the table's own order).
    """
    if not columns:
        raise TableError(f"cannot order {ident} by no columns")
    cols = ", ".join(quote_ident(c) for c in columns)
    return f"ALTER TABLE {quote_qualified(ident)} WRITE LOCALLY ORDERED BY {cols}"


def sort_order_text(columns: Sequence[str]) -> str:
    """The ``sort-order`` table property Iceberg's Spark shows for ascending ``columns``
    (to tell whether :func:`write_order_sql` is in force already)."""
    return ", ".join(f"{c} ASC NULLS FIRST" for c in columns)
