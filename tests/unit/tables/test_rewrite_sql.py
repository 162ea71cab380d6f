"""The two parts of a whole-table rewrite: the MERGE's rows for the batch's keys, the rest."""

from __future__ import annotations

from icetide.tables.merge_engines import Deduplicate
from icetide.tables.merge_sql import MergeSpec
from icetide.tables.rewrite_sql import rewrite_parts

TYPES = {"id": "string", "v": "int", "seq": "bigint"}
SPEC = MergeSpec(target="`lake`.`db`.`t`", source="b", keys=["id"], columns=list(TYPES))


def test_both_parts_read_the_target_as_of_the_snapshot_the_rewrite_validates_from() -> None:
    parts = rewrite_parts(Deduplicate("seq"), SPEC, TYPES, collapsed_view="c", as_of=42)
    assert parts.changed.count("`lake`.`db`.`t`.`snapshot_id_42` AS t") == 1
    assert "`lake`.`db`.`t`.`snapshot_id_42` AS t" in parts.kept


def test_the_kept_rows_are_the_stored_rows_of_keys_the_batch_does_not_hold() -> None:
    kept = rewrite_parts(Deduplicate("seq"), SPEC, TYPES, collapsed_view="c", as_of=None).kept
    assert kept.startswith("SELECT t.`id` AS `id`, t.`v` AS `v`, t.`seq` AS `seq`")
    assert "LEFT ANTI JOIN `c` AS s ON t.`id` = s.`id`" in kept
    assert "snapshot_id" not in kept  # a table with no snapshot: read as it is
