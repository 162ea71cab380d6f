"""The file:// scheme of icetide's sessions: Hadoop's checksummed local file system over
one that sets permissions through Java NIO, not a forked chmod (runtime/session.py)."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

from pyspark.sql import SparkSession

from icetide.runtime.session import LOCAL_FS


def test_the_file_scheme_sets_permissions_without_a_shell(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    fs = jvm.org.apache.hadoop.fs.FileSystem.getLocal(conf)
    assert fs.getClass().getName() == LOCAL_FS
    assert fs.getRawFileSystem().getClass().getSimpleName() == "NakedLocalFileSystem"


def test_an_iceberg_write_on_local_disk_keeps_permissions_and_checksums(
        spark: SparkSession) -> None:
    table = f"lake.localfs.t_{uuid.uuid4().hex[:8]}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.localfs")
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    spark.range(3).writeTo(table).append()
    location = spark.sql(f"SELECT file_path FROM {table}.files").first()
    assert location is not None
    data = Path(location.file_path.removeprefix("file:"))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(data.stat().st_mode) == 0o666 & ~umask  # Hadoop's default, umasked
    assert (data.parent / f".{data.name}.crc").is_file()  # still the checksummed file system
    assert sorted(r.id for r in spark.table(table).collect()) == [0, 1, 2]
