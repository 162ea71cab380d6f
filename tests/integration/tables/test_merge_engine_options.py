"""Merge-engine keywords no other test exercised on Spark (docs/options.md):
``aggregation(default=)`` for the columns not named, ``first_row(sequence_field)``
keeping the earliest version by that field, and ``first_row(on_delete="error")``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from icetide import pipelines as dp
from icetide.tables.changelog import changelog_table_name
from tests.integration.tables.test_merge_engines_spark import NS, OPS, Table, r

pytestmark = pytest.mark.spark
NAMES = ("opt_aggregation", "opt_first_row", "opt_first_row_strict")


@pytest.fixture()
def sp(spark: SparkSession) -> Iterator[SparkSession]:
    yield spark
    for name in NAMES:
        for table in (f"{NS}.{name}", changelog_table_name(f"{NS}.{name}")):
            spark.sql(f"DROP TABLE IF EXISTS lake.{table}")


def test_aggregation_default_applies_to_the_columns_not_named(sp: SparkSession) -> None:
    cols = {"id": "int", "views": "bigint", "best": "int"}
    summed = Table(sp, dp.aggregation(views="sum", default="max"), cols, ["id"],
                   name=f"{NS}.{NAMES[0]}")
    summed.run([r(1, 0, views=1, best=5), r(1, 1, views=2, best=3)], OPS)
    summed.run([r(1, 0, views=4, best=4)], OPS)
    assert summed.rows()[1] == {"id": 1, "views": 7, "best": 5}  # max, not the last (4)


def test_first_row_sequence_field_and_on_delete(sp: SparkSession) -> None:
    cols = {"id": "int", "v": "string", "ts": "bigint"}
    t = Table(sp, dp.first_row("ts"), cols, ["id"], name=f"{NS}.{NAMES[1]}")
    t.run([r(1, 0, v="later", ts=9), r(1, 1, v="earliest", ts=2)], OPS)
    assert t.rows()[1] == {"id": 1, "v": "earliest", "ts": 2}  # by ts, not arrival
    strict = Table(sp, dp.first_row(on_delete="error"), {"id": "int", "v": "string"}, ["id"],
                   name=f"{NS}.{NAMES[2]}")
    with pytest.raises(Exception, match="on_delete"):
        strict.run([r(1, 0, "-D", v="gone")], OPS)
