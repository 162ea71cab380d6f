"""The rows a range of a table's snapshots added and removed, whatever wrote them.

Between the range's first snapshot ``start`` (exclusive, ``None``: before the first) and
``end``: **added** — rows live at ``end`` in data files not live at ``start``;
**removed** — rows live at ``start`` not live at ``end`` (files the range removed, and
positions its new position-delete files or deletion vectors name). Copy-on-write rewrites
are netted as multisets (``EXCEPT ALL``); a row added and removed inside the range is in
neither. Only the touched files are read, their scan tasks planned by Iceberg at both
ends and staged (``ScanTaskSetManager``); reads are pinned, so a replay gets the same
rows. A range that starts with an icetide retraction and appends after it reads its
removed rows from the Parquet file the retraction names (:data:`REMOVED_ROWS`), when it
is still there. Equality deletes stop the reader (:class:`ChangeNotReadable`). How and
why: docs/semantics.md, "Reading a table's changes".
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icetide.errors import SourceError
from icetide.lake.commit import load_table

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

FILE, POS = "_file", "_pos"
#: Snapshot summary key: the Parquet file of the rows the commit removed (see above).
REMOVED_ROWS = "icetide.removed-rows"
#: Its column of how many stored copies of each row were removed.
COPIES = "__icetide_copies"
#: The columns of an Iceberg position-delete file (the spec's ``file_path`` and ``pos``).
POSITION_DELETE_SCHEMA = "file_path STRING, pos BIGINT"
_ids = itertools.count()


class ChangeNotReadable(SourceError):
    """A snapshot changed rows in a way icetide cannot turn into added and removed rows."""

    def __init__(self, ident: str, snapshot: int | None, operation: str, why: str,
                 target: str | None = None) -> None:
        table = target.split(".", 1)[-1] if target else "<the table its flow writes>"
        super().__init__(
            f"{ident}: snapshot {snapshot} ({operation}) {why}; the flows reading it stop "
            "rather than skip the change. Fix: rebuild what reads it from what it holds "
            f"now: `icetide table refresh {table} --downstream`")
        self.ident, self.snapshot, self.operation, self.why = ident, snapshot, operation, why

    def stopping(self, target: str) -> ChangeNotReadable:
        """The same error, naming the table whose flow it stopped."""
        return ChangeNotReadable(self.ident, self.snapshot, self.operation, self.why, target)


@dataclass
class _Files:
    """The scan tasks of one snapshot, by data file, and the delete files each has."""

    tasks: dict[str, JavaObject]
    deletes: dict[str, frozenset[str]]
    formats: dict[str, str]  # delete file → format (PARQUET, AVRO, ORC, PUFFIN)
    contents: dict[str, str]  # delete file → POSITION_DELETES | EQUALITY_DELETES


def _plan(table: JavaObject, snapshot: int | None) -> _Files:
    files = _Files({}, {}, {}, {})
    if snapshot is None:
        return files
    tasks = table.newScan().useSnapshot(snapshot).planFiles()
    try:
        for task in _java_iter(tasks.iterator()):
            path = str(task.file().location())
            files.tasks[path] = task
            names = []
            for delete in _java_iter(task.deletes().iterator()):
                name = str(delete.location())
                names.append(name)
                files.formats[name] = str(delete.format().name())
                files.contents[name] = str(delete.content().name())
            files.deletes[path] = frozenset(names)
    finally:
        tasks.close()
    return files


def _java_iter(it: JavaObject) -> Iterator[JavaObject]:
    while it.hasNext():
        yield it.next()


@dataclass
class RangeChanges:
    """What ``(start, end]`` of ``ident`` changed: read with :meth:`added` and
    :meth:`removed`; :meth:`close` releases the staged scan tasks (after the batch)."""

    spark: SparkSession
    ident: str
    start: int | None
    end: int
    added_files: list[str]
    removed_files: list[str]
    touched: list[str]  # data files live at start that lost rows (removed files included)
    new_deletes: list[str]  # position-delete files live at end, not at start
    _start_files: _Files
    _end_files: _Files
    _staged: list[str]
    _table: JavaObject

    @property
    def removes_rows(self) -> bool:
        return bool(self.touched)

    def _stage(self, files: _Files, paths: list[str], snapshot: int | None) -> DataFrame:
        """The rows of data files ``paths`` as planned in ``files`` (at ``snapshot``), with
        ``_file`` and ``_pos``. Format v3 tables (row lineage) do not expose those columns
        on a staged scan: they are read at the snapshot and filtered by ``_file`` (the
        whole table is scanned)."""
        from pyspark.sql import functions as F

        if int(self._table.operations().current().formatVersion()) >= 3:
            return (self.spark.read.format("iceberg").option("snapshot-id", snapshot)
                    .load(self.ident).select(*self._columns(), FILE, POS)
                    .where(F.col(FILE).isin(paths)))
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None
        tasks = jvm.java.util.ArrayList()
        for path in paths:
            tasks.add(files.tasks[path])
        set_id = f"icetide-changes-{uuid.uuid4().hex}-{next(_ids)}"
        jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().stageTasks(
            self._table, set_id, tasks)
        self._staged.append(set_id)
        split = split_size(sum(int(files.tasks[p].file().fileSizeInBytes()) for p in paths),
                           self.spark.sparkContext.defaultParallelism)
        return (self.spark.read.format("iceberg").option("scan-task-set-id", set_id)
                .option("split-size", str(split))
                .load(self.ident).select(*self._columns(), FILE, POS))

    def _columns(self) -> list[str]:
        return [f.name for f in self.spark.table(self.ident).schema.fields]

    def _empty(self) -> DataFrame:
        return self.spark.table(self.ident).limit(0)

    def added_raw(self) -> DataFrame:
        if not self.added_files:
            return self._empty()
        return self._stage(self._end_files, self.added_files, self.end).select(
            *self._columns())

    def removed_raw(self) -> DataFrame:
        from pyspark.sql import functions as F

        if not self.touched:
            return self._empty()
        rows = self._stage(self._start_files, self.touched, self.start)
        whole = F.col(FILE).isin(self.removed_files) if self.removed_files else F.lit(False)
        gone = rows.where(whole)
        if self.new_deletes:
            positions = _positions(self.spark, self.ident, self.end, self.new_deletes,
                                   self._start_files)
            deleted = rows.where(~whole).join(F.broadcast(positions), [FILE, POS], "left_semi")
            gone = gone.unionByName(deleted)
        return gone.select(*self._columns())

    def added(self) -> DataFrame:
        """The rows the range added (net of rows a rewrite copied unchanged)."""
        if self.removed_files and self.added_files:
            return self.added_raw().exceptAll(self.removed_raw())
        return self.added_raw()

    def removed(self) -> DataFrame:
        """The rows the range removed (net of rows a rewrite copied unchanged)."""
        if self.removed_files and self.added_files:
            return self.removed_raw().exceptAll(self.added_raw())
        logged = self._logged_removals()
        return logged if logged is not None else self.removed_raw()

    def _logged_removals(self) -> DataFrame | None:
        """The removed rows from the file the range's first commit names, when the range
        is that commit and appends after it, and the file is there with every column."""
        from pyspark.sql import functions as F

        path = _first_removal_file(self._table, self.start, self.end)
        if path is None or self.removed_files:
            return None
        if not _exists(self.spark, path):
            log.info("%s: the removed rows of the commit after snapshot %s are gone from "
                     "%s; reading them from the data files", self.ident, self.start, path)
            return None
        rows = self.spark.read.parquet(path)
        schema = self.spark.table(self.ident).schema
        if not {f.name for f in schema.fields} | {COPIES} <= set(rows.columns):
            return None
        copies = F.explode(F.array_repeat(F.lit(1), F.col(COPIES).cast("int")))
        return (rows.select("*", copies.alias("__icetide_copy"))
                .select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields]))

    def close(self) -> None:
        jvm = self.spark.sparkContext._jvm
        if jvm is None:
            return
        manager = jvm.org.apache.iceberg.spark.ScanTaskSetManager.get()
        for set_id in self._staged:
            manager.removeTasks(self._table, set_id)
        self._staged.clear()


#: The least bytes a staged read's task is given (:func:`split_size`).
MIN_SPLIT_BYTES = 1 << 20
#: Iceberg's default ``read.split.target-size``: the most a staged read's task is given.
MAX_SPLIT_BYTES = 128 << 20


def split_size(total_bytes: int, slots: int) -> int:
    """The ``split-size`` of a staged read of ``total_bytes``: the bytes over the
    executors' ``slots``, so every core reads (Iceberg packs staged tasks into groups of
    its default 128 MiB: an erase that touched every file of a 10 M-row table was read
    by one task), within [:data:`MIN_SPLIT_BYTES`, :data:`MAX_SPLIT_BYTES`]."""
    share = -(-total_bytes // max(1, slots))
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, share))


def _first_removal_file(table: JavaObject, start: int | None, end: int) -> str | None:
    """The :data:`REMOVED_ROWS` file of the first commit after ``start``, when every later
    commit up to ``end`` is an append (so every row it names was live at ``start`` and
    none was removed again); ``None`` otherwise."""
    if start is None:
        return None
    chain = []
    snap = table.snapshot(end)
    while snap is not None and int(snap.snapshotId()) != start:
        chain.append(snap)
        parent = snap.parentId()
        snap = None if parent is None else table.snapshot(parent)
    if snap is None or not chain or any(str(s.operation()) != "append" for s in chain[:-1]):
        return None
    found = chain[-1].summary().get(REMOVED_ROWS)
    return None if found is None else str(found)


def _exists(spark: SparkSession, path: str) -> bool:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hadoop.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
                .exists(hadoop))


def write_removed(spark: SparkSession, ident: str, rows: DataFrame) -> str:
    """Write ``rows`` (the table's columns and :data:`COPIES`; other columns are ignored by
    readers) under the table's location, in a directory of its own, a file per partition
    of ``rows``; its path, for the commit's :data:`REMOVED_ROWS`."""
    path = f"{str(load_table(spark, ident).location()).rstrip('/')}/icetide-removed/" \
           f"{uuid.uuid4().hex}"
    rows.write.parquet(path)
    return path


def _positions(spark: SparkSession, ident: str, end: int, paths: list[str], files: _Files
               ) -> DataFrame:
    """``(_file, _pos)`` of every position the delete files ``paths`` name: position-delete
    files are read as they are; deletion vectors (format v3, in Puffin files) through the
    table's ``position_deletes`` metadata table as of ``end``."""
    from pyspark.sql import functions as F

    by_format: dict[str, list[str]] = {}
    for path in paths:
        by_format.setdefault(files.formats.get(path, "PARQUET"), []).append(path)
    frames = []
    for fmt, found in by_format.items():
        if fmt == "PUFFIN":
            frames.append(spark.read.format("iceberg").option("snapshot-id", end)
                          .load(f"{ident}.position_deletes")
                          .where(F.col("delete_file_path").isin(found))
                          .select("file_path", "pos"))
        else:
            # the spec fixes these two columns: no job to infer the files' schema
            frames.append(spark.read.format(fmt.lower()).schema(POSITION_DELETE_SCHEMA)
                          .load(found).select("file_path", "pos"))
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out.withColumnsRenamed({"file_path": FILE, "pos": POS})


def range_changes(spark: SparkSession, ident: str, start: int | None, end: int,
                  ) -> RangeChanges:
    """Plan what ``(start, end]`` of ``ident`` changed (nothing is read yet)."""
    table = load_table(spark, ident)
    before, after = _plan(table, start), _plan(table, end)
    new_deletes = sorted(set().union(*after.deletes.values()) - set().union(
        *before.deletes.values())) if after.deletes else []
    for name in new_deletes:
        if after.contents[name] != "POSITION_DELETES":
            raise ChangeNotReadable(ident, end, "delete/overwrite",
                                    f"wrote equality deletes ({name}), which icetide cannot "
                                    "turn into removed rows")
    fresh = set(new_deletes)
    removed = sorted(set(before.tasks) - set(after.tasks))
    hit = sorted(p for p in before.tasks if p in after.tasks and after.deletes[p] & fresh)
    before.formats.update({n: after.formats[n] for n in new_deletes})
    return RangeChanges(spark, ident, start, end, sorted(set(after.tasks) - set(before.tasks)),
                        removed, sorted(set(removed) | set(hit)), new_deletes, before, after,
                        [], table)
