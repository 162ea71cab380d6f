"""The materialized-view refresh source's pure parts (positions, validation)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from icetide.errors import SourceError
from icetide.sources.refresh import SnapshotIdsSource

NO_SPARK = cast(Any, None)  # these checks never reach Spark


def test_key_inputs_and_replan() -> None:
    src = SnapshotIdsSource(NO_SPARK, "lake.ads.r", ["lake.dwd.b", "lake.dwd.a", "lake.dwd.b"])
    assert src.key == "refresh:lake.ads.r" and src.inputs == ("lake.dwd.a", "lake.dwd.b")
    assert src.initial_position() == {}
    end = {"lake.dwd.a": 7, "lake.dwd.b": None}
    assert src.plan_to({}, end).records == 2  # both differ from "never refreshed"
    assert src.plan_to({"lake.dwd.a": 7, "lake.dwd.b": None}, end).records == 0
    assert src.plan_to({"lake.dwd.a": 6, "lake.dwd.b": None}, end).records == 1


def test_rejects_views_without_inputs_and_stale_positions() -> None:
    with pytest.raises(SourceError, match=r"lake\.ads\.r reads no table with dp\.read"):
        SnapshotIdsSource(NO_SPARK, "lake.ads.r", [])
    src = SnapshotIdsSource(NO_SPARK, "lake.ads.r", ["lake.a.b"])
    with pytest.raises(SourceError, match=r"names tables lake\.x\.y that.*drop the view"):
        src.plan_to({}, {"lake.x.y": 1})
