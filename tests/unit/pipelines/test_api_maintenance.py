"""``sort_order=`` and ``maintenance=`` on table declarations become table properties."""

from __future__ import annotations

import pytest

from icetide import pipelines as dp
from icetide.errors import PipelineError
from icetide.pipelines import GraphRegistry


def test_sort_order_and_maintenance_become_table_properties(registry: GraphRegistry) -> None:
    @dp.table(name="ods.clicks", sort_order="zorder(productId, uid)",
              maintenance={"target_file_size": 64 * 1024 * 1024, "snapshot_retention": "2h"},
              table_properties={"write.format.default": "parquet"})
    def clicks() -> None: ...

    props = dict(registry.tables["ods.clicks"].table_properties)
    assert props == {"write.format.default": "parquet",
                     "icetide.maintenance.sort-order": "zorder(productId, uid)",
                     "icetide.maintenance.target-file-size": str(64 * 1024 * 1024),
                     "icetide.maintenance.snapshot-retention": "2h"}


def test_unknown_or_bad_maintenance_settings_fail_at_load(registry: GraphRegistry) -> None:
    with pytest.raises(PipelineError, match="no such maintenance setting"):
        dp.create_streaming_table("ods.a", maintenance={"target_size": 1})
    with pytest.raises(PipelineError, match="orphan-age"):
        dp.create_streaming_table("ods.b", maintenance={"orphan_age": "5 minutes"})
    with pytest.raises(PipelineError, match=r"maintenance=\{'enabled': False\} is not applied "
                                            r"per table.*defaults\.maintenance\.enabled"):
        dp.create_streaming_table("ods.c", maintenance={"enabled": False})
