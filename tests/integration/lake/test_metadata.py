"""A table's metadata read in one go: from the local metadata.json, or fetched from the JVM."""

from __future__ import annotations

from pyspark.sql import SparkSession

from icetide.lake import commit
from icetide.lake.metadata import _fetch_json, metadata_of, parse_metadata


def test_file_and_jvm_give_the_same_metadata(spark: SparkSession) -> None:
    ident = "lake.meta_read.events"
    spark.sql(f"CREATE TABLE {ident} (k string, v bigint) USING iceberg "
              "TBLPROPERTIES ('icetide.test' = 'yes')")
    row = spark.createDataFrame([("a", 1)], "k string, v bigint")
    for i in range(12):  # > 8 KiB of metadata: several pieces over py4j
        commit.append(row, ident, {"icetide.flow": "f", "icetide.pos": f'{{"p": {i}}}'})
    table = commit.load_table(spark, ident)
    current = table.operations().current()
    from_file = metadata_of(spark, table)
    fetched = parse_metadata(_fetch_json(spark, current))
    tiny = parse_metadata(_fetch_json(spark, current, chunk=7))  # pieces end mid-escape
    assert len(_fetch_json(spark, current)) > 8192
    assert from_file == fetched == tiny
    assert from_file.current_snapshot_id == int(table.currentSnapshot().snapshotId())
    assert len(from_file.snapshots) == 12 and from_file.properties["icetide.test"] == "yes"
    marker = commit.last_marker(spark, ident, "f")
    assert marker is not None and marker.end == {"p": 11}
