"""format="hudi" declarations: accepted for primary-key tables with Hudi's own options,
refused (naming the fix) for anything icetide would not apply to a Hudi table."""

from __future__ import annotations

from typing import Any

import pytest

from icetide import pipelines as dp
from icetide.errors import PipelineError
from icetide.pipelines import GraphRegistry


def test_a_hudi_cdc_target_keeps_its_format_and_hudi_options(registry: GraphRegistry) -> None:
    dp.create_streaming_table("db.t", primary_key=["id"], format="hudi",
                              table_properties={"hoodie.table.type": "COPY_ON_WRITE",
                                                "hoodie.parquet.max.file.size": "1048576"})
    table = registry.tables["db.t"]
    assert table.format == "hudi"
    assert dict(table.table_properties)["hoodie.table.type"] == "COPY_ON_WRITE"
    dp.create_streaming_table("db.u", primary_key=["id"])
    assert registry.tables["db.u"].format == "iceberg"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, r"format='hudi' is for CDC targets so far.*primary_key"),
        ({"primary_key": ["id"], "changelog": True}, "changelog is not applied"),
        ({"primary_key": ["id"], "partition_cols": ["d"]}, "partition_cols is not applied"),
        ({"primary_key": ["id"], "merge_engine": "deduplicate"}, "merge_engine is not applied"),
        ({"primary_key": ["id"], "table_properties": {"format-version": "3"}},
         r"'format-version' is not a Hudi option.*hoodie\.\*"),
        ({"primary_key": ["id"],
          "table_properties": {"hoodie.datasource.write.recordkey.field": "x"}},
         r"recordkey\.field is set by icetide.*drop it"),
        ({"primary_key": ["id"], "table_properties": {"hoodie.base.path": "/x"}},
         "is set by icetide"),
        ({"primary_key": ["id"], "table_properties": {"hoodie.table.type": "MOR"}},
         r"'MOR' is not a Hudi table type: write one of MERGE_ON_READ, COPY_ON_WRITE"),
        ({"primary_key": ["id"], "maintenance": {"min_input_files": 2}},
         "not a Hudi option"),
        ({"primary_key": ["id"], "table_properties": {"hoodie.cleaner.commits.retained": "5"}},
         r"cleaner\.commits\.retained is for Hudi's compaction, cleaning or archival.*"
         r"maintenance\.snapshot_retention"),
        ({"primary_key": ["id"], "table_properties": {"hoodie.compact.inline": "true"}},
         "which icetide's maintenance runs"),
        ({"primary_key": ["id"], "table_properties": {"hoodie.keep.min.commits": "30"}},
         "which icetide's maintenance runs"),
    ],
)
def test_what_a_hudi_table_cannot_take_is_refused_at_its_declaration(
        registry: GraphRegistry, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PipelineError, match=message) as info:
        dp.create_streaming_table("db.t", format="hudi", **kwargs)
    assert str(info.value).startswith(f"{__file__}:")


def test_another_format_names_both_that_icetide_writes(registry: GraphRegistry) -> None:
    with pytest.raises(PipelineError, match=r"format='delta'.*format='hudi', or drop format="):
        dp.create_streaming_table("db.t", format="delta")
