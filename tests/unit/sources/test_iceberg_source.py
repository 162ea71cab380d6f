"""What a snapshot of an upstream table changed, by its summary (no JVM)."""

from __future__ import annotations

import pytest

from icetide.lake.changes import ChangeNotReadable
from icetide.lake.metadata import SnapshotInfo
from icetide.sources.iceberg import IcebergTableSource, Step, snapshot_step


@pytest.mark.parametrize(("operation", "summary", "log", "step"), [
    ("append", {"added-records": "5"}, False, Step(1, 5, False)),
    ("replace", {"added-records": "50", "deleted-records": "50"}, False, Step(1, 0, False)),
    ("delete", {"added-position-deletes": "3"}, False, Step(1, 3, True)),
    ("delete", {"deleted-records": "7"}, False, Step(1, 7, True)),  # copy-on-write
    ("overwrite", {"added-records": "2", "added-position-deletes": "2"}, False,
     Step(1, 4, True)),
    ("overwrite", {"added-records": "2"}, False, Step(1, 2, True)),  # read as changes
    ("delete", {"added-position-deletes": "3"}, True, Step(1, 0, False)),  # log retention
    ("append", {"added-records": "4"}, True, Step(1, 4, False)),
])
def test_snapshot_step(operation: str, summary: dict[str, str], log: bool, step: Step) -> None:
    assert snapshot_step(1, operation, summary, log=log) == step


def test_equality_deletes_stop_with_the_fix() -> None:
    source = IcebergTableSource(None, "lake.ods.t")  # type: ignore[arg-type]
    snap = SnapshotInfo(7, 6, 2, 0, "delete", {"added-equality-deletes": "1"})
    with pytest.raises(ChangeNotReadable) as err:
        source._step(snap, 6)
    text = str(err.value)
    assert "lake.ods.t" in text and "snapshot 7 (delete)" in text
    assert "icetide table refresh" in text and "--downstream" in text


def test_upsert_table_without_changelog_is_refused() -> None:
    source = IcebergTableSource(None, "lake.dim.p", upserts=True)  # type: ignore[arg-type]
    snap = SnapshotInfo(7, 6, 2, 0, "overwrite", {"added-position-deletes": "1"})
    with pytest.raises(Exception, match="changelog=True"):
        source._step(snap, 6)
