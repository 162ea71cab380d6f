"""create_auto_cdc_flow takes real pyspark Columns where SDP does: their SQL expression."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icetide import pipelines as dp
from icetide.pipelines import GraphRegistry, registration_context

pytestmark = pytest.mark.spark


def test_columns_become_their_sql_expressions(spark: SparkSession) -> None:
    registry = GraphRegistry(database="db", catalog="lake")
    with registration_context(registry):
        dp.create_streaming_table("dim.users", primary_key=["uid"])
        dp.create_auto_cdc_flow(
            target="dim.users", source="users_cdc", keys=[F.col("uid")],
            sequence_by=F.col("seq"), apply_as_deletes=F.expr("op = 'd'"),
            except_column_list=[F.col("op"), "seq"])
    cdc = registry.flows["dim.users"].cdc
    assert cdc is not None
    assert (cdc.keys, cdc.sequence_by) == (("uid",), "seq")
    assert cdc.except_column_list == ("op", "seq")
    assert cdc.apply_as_deletes == str(F.expr("op = 'd'")._jc.toString())
    assert repr(F.col("seq")) == f"Column<'{cdc.sequence_by}'>"  # what repr() shows
