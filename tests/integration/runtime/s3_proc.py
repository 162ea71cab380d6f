"""A Spark process on an s3:// warehouse (settings from the environment), driven by
test_s3_warehouse.py: ``python -m tests.integration.runtime.s3_proc OUT.json``.

Writes a merge-on-read table with deletes, plants an orphan object beside its data, runs
the orphan sweep (everything older than now + 60 s: only references protect a file), a
maintenance pass (compaction, expiry) and a query over the Thrift endpoint, and reports
what it saw as JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict

from pyhive import hive

from icetide.app.context import Context
from icetide.config import MaintenanceConfig, load_settings
from icetide.devkit.embedded.process import free_port
from icetide.lake.commit import load_table
from icetide.maintainer import Maintainer, actions
from icetide.runtime import s3
from icetide.runtime.session import get_spark

TABLE = "db.clicks"
#: compact the two inserts' small files and expire all but the newest snapshot at once
EAGER = MaintenanceConfig(snapshot_retention=0, retain_last=1, min_input_files=2)
ORPHAN = "data/orphan-never-committed.parquet"
#: SeaweedFS's REST catalog refuses a bucket transform in CREATE TABLE ("Invalid request
#: body"): the REST test asks for day partitions only
PARTITIONING = os.environ.get("S3_PROC_PARTITIONING", "day, bucket(4, id)")


def main(out: str) -> None:
    settings = load_settings()
    spark = get_spark(settings)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS db")
    spark.sql(f"CREATE TABLE {TABLE} (id BIGINT, kind STRING, day DATE) USING iceberg "
              f"PARTITIONED BY ({PARTITIONING}) TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')")
    for start in (0, 100):
        spark.sql(f"INSERT INTO {TABLE} SELECT id, IF(id % 2 = 0, 'view', 'click'), "
                  f"DATE'2026-11-27' + CAST(id % 2 AS INT) FROM range({start}, {start + 100})")
    spark.sql(f"DELETE FROM {TABLE} WHERE id % 10 = 0")
    location = str(load_table(spark, TABLE).location())
    bucket, key = s3.bucket_and_key(location)
    with s3.filesystem(settings).open_output_stream(f"{bucket}/{key}/{ORPHAN}") as f:
        f.write(b"not a parquet file")
    swept = actions.remove_orphans(spark, load_table(spark, TABLE),
                                   int(time.time() * 1000) + 60_000, dry_run=False)
    upkeep = Maintainer(spark, settings, policy=EAGER).run(TABLE, orphans=False)
    rows = spark.sql(f"SELECT count(*), sum(id) FROM {TABLE}").collect()[0]
    with Context(settings).serve_sql(port=free_port()) as server:
        conn = hive.connect(host=server.host, port=server.port)
        cursor = conn.cursor()
        cursor.execute(f"SELECT count(*) FROM {TABLE}")
        served = cursor.fetchall()[0][0]
        conn.close()
    with open(out, "w") as f:
        json.dump({"location": location, "swept": asdict(swept), "count": rows[0], "sum": rows[1],
                   "maintained": sorted(upkeep.actions.done()), "served": served}, f)


if __name__ == "__main__":
    main(sys.argv[1])
