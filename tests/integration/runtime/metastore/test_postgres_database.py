"""The metastore service on a PostgreSQL database: tables, commits and the lock work, and
the database password is in no file and no command line."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg2
import pytest
from pydantic import SecretStr
from pyspark.sql import SparkSession

from icetide.config import CatalogConfig, MetastoreConfig, Settings
from icetide.devkit.embedded.postgres import EmbeddedPostgres
from icetide.devkit.embedded.process import free_port
from icetide.runtime.catalogs import pyiceberg_catalog
from icetide.runtime.metastore.service import ensure_metastore, stop_metastore
from icetide.runtime.metastore.site import MetastorePaths
from tests.metastores import register_catalog

pytestmark = [pytest.mark.spark, pytest.mark.postgres]
SECRET = "pg-secret-4711"


def test_metastore_on_postgres(spark: SparkSession, postgres: EmbeddedPostgres,
                               tmp_path: Path) -> None:
    db = f"hms_{os.getpid()}"
    conn = psycopg2.connect(postgres.dsn())
    conn.autocommit = True
    conn.cursor().execute(f'CREATE DATABASE "{db}"')
    conn.close()
    url = postgres.jdbc_url.rsplit("/", 1)[0] + "/" + db
    settings = Settings(home=tmp_path, catalog=CatalogConfig(name="hmspg", type="hive"),
                        metastore=MetastoreConfig(port=free_port(), database=url,
                                                  user=postgres.user,
                                                  password=SecretStr(SECRET)))
    state = ensure_metastore(settings)
    try:
        register_catalog(spark, settings)
        spark.sql("CREATE NAMESPACE IF NOT EXISTS hmspg.shop")
        spark.sql("CREATE TABLE hmspg.shop.orders (id BIGINT, v STRING) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
        spark.sql("INSERT INTO hmspg.shop.orders VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        spark.sql("DELETE FROM hmspg.shop.orders WHERE id = 2")  # a second locked commit
        rows = pyiceberg_catalog(settings).load_table("shop.orders").scan().to_arrow()
        assert sorted(rows.column("id").to_pylist()) == [1, 3]
        paths = MetastorePaths.of(settings)
        assert not paths.database.exists()  # no Derby
        assert SECRET not in (paths.conf_dir / "hive-site.xml").read_text()
        assert SECRET not in Path(f"/proc/{state.pid}/cmdline").read_text()
        assert SECRET not in paths.log.read_text()
        with psycopg2.connect(postgres.dsn(db)) as pg, pg.cursor() as cur:
            cur.execute('SELECT "TBL_NAME" FROM "TBLS"')
            assert ("orders",) in cur.fetchall()  # the catalog lives in PostgreSQL
            cur.execute("SELECT count(*) FROM hive_locks")
            assert cur.fetchone() == (0,)  # every commit released its lock
    finally:
        stop_metastore(settings)
