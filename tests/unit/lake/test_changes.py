"""What a MERGE did, read back from its snapshot summary (no JVM)."""

from __future__ import annotations

from icetide.lake.sinks import Changes


def test_counted_changes_round_trip_through_the_summary() -> None:
    changes = Changes(inserted=3, updated=2, deleted=1)
    assert Changes.from_summary({**changes.summary(), "added-records": "99"}) == changes
    assert Changes.from_summary({"added-records": "5"}) is None


def test_iceberg_figures_of_a_merge_on_read_commit_give_the_changes() -> None:
    """Every position delete of a commit without retractions is an update; the rows added
    are the inserts and the updates. Deletion vectors replace the file's previous one,
    whose positions are counted as removed."""
    assert Changes.from_figures({"added-records": "5", "added-position-deletes": "2"}) \
        == Changes(inserted=3, updated=2)
    assert Changes.from_figures({"added-records": "2", "added-position-deletes": "3",
                                 "removed-position-deletes": "1"}) == Changes(0, 2, 0)
    assert Changes.from_figures({}) == Changes()  # a MERGE that changed nothing


def test_a_staged_read_is_split_across_every_slot_within_bounds() -> None:
    from icetide.lake.changes import MAX_SPLIT_BYTES, MIN_SPLIT_BYTES, split_size

    # an erase that touched 170 MB of files on 2 cores: two tasks, not Iceberg's one
    assert split_size(170_000_000, 2) == 85_000_000
    assert split_size(10_000, 8) == MIN_SPLIT_BYTES  # tiny reads are not cut finer
    assert split_size(10 << 30, 2) == MAX_SPLIT_BYTES  # nor big ones coarser than Iceberg's
    assert split_size(5 << 20, 0) == 5 << 20  # no slot reported: one share
