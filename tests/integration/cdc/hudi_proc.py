"""What a Spark session with Hudi (settings from the environment, ``spark.hudi``) reads of
the Hudi targets of test_hudi.py: ``python hudi_proc.py OUT.json COLUMNS
FLOW=IDENT|PATH|NAME ... [iceberg:IDENT ...]`` (an Iceberg table: its rows only).

Per target: its rows (text, as cdc_pipeline_helpers.mysql_rows gives them) read from the
files and by name through the metastore (``spark_catalog``), its completed commits
(instant and action) and the flow's marker end, as read back on resume."""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from icetide.config import load_settings
from icetide.lake import hudi
from icetide.lake.commit import last_marker
from icetide.model.keys import MarkerKeys
from icetide.runtime.session import get_spark


def text_rows(df: DataFrame, columns: list[str]) -> list[list[Any]]:
    exprs = []
    for f in df.schema.fields:
        if f.name in columns:
            col = f"`{f.name}`"
            kind = f.dataType.simpleString()
            exprs.append(f"date_format({col}, 'yyyy-MM-dd HH:mm:ss') AS {col}"
                         if kind.startswith("timestamp") else f"CAST({col} AS STRING) AS {col}")
    return sorted([list(r) for r in df.selectExpr(*exprs).select(*columns).collect()],
                  key=str)


def commits(spark: SparkSession, path: str) -> list[str]:
    timeline = (hudi._meta_client(spark, path).getActiveTimeline().getCommitsTimeline()
                .filterCompletedInstants())
    return [f"{i.requestedTime()}:{i.getAction()}" for i in timeline.getInstants()]


def chain(spark: SparkSession, path: str, flow: str) -> list[list[Any]]:
    """``[start, end]`` of every completed commit carrying ``flow``'s marker, in order."""
    timeline = (hudi._meta_client(spark, path).getActiveTimeline().getCommitsTimeline()
                .filterCompletedInstants())
    found = []
    for instant in timeline.getInstants():
        text = timeline.readCommitMetadata(instant).getExtraMetadata().get(hudi.MARKER_KEY)
        summary = json.loads(str(text)) if text else {}
        if summary.get(MarkerKeys.FLOW) == flow:
            found.append([json.loads(summary[MarkerKeys.START]),
                          json.loads(summary[MarkerKeys.POS])])
    return found


def rollbacks(spark: SparkSession, path: str) -> int:
    timeline = hudi._meta_client(spark, path).getActiveTimeline().getRollbackTimeline()
    return int(timeline.filterCompletedInstants().countInstants())


def report(spark: SparkSession, flow: str, ident: str, path: str,
           columns: list[str], by_name: str) -> dict[str, Any]:
    db = ident.split(".")[1]
    table = hudi.HudiTable(ident, path, ("id",), "_cdc_pos")
    hudi.register(table)
    marker = last_marker(spark, ident, flow)
    return {
        "rows": text_rows(hudi.read(spark, table), columns),
        "by_name": text_rows(spark.table(f"spark_catalog.{db}.{by_name}"), columns),
        "commits": commits(spark, path),
        "chain": chain(spark, path, flow),
        "rollbacks": rollbacks(spark, path),
        "marker_end": None if marker is None else json.loads(json.dumps(marker.end)),
        "tables": sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN spark_catalog.{db}")
                         .collect()),
    }


def main() -> None:
    out, columns = sys.argv[1], sys.argv[2].split(",")
    spark = get_spark(load_settings(None))
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    found = {}
    for arg in sys.argv[3:]:
        if arg.startswith("iceberg:"):  # an Iceberg table of the same session, by name
            ident = arg.split(":", 1)[1]
            found[ident] = {"rows": text_rows(spark.table(ident), columns)}
            continue
        flow, rest = arg.split("=", 1)
        ident, path, by_name = rest.split("|")
        found[flow] = report(spark, flow, ident, path, columns, by_name)
    with open(out, "w") as f:
        json.dump(found, f)


if __name__ == "__main__":
    main()
