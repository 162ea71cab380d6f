"""``Context.serve_sql``: real HiveServer2 clients (PyHive, beeline) against a real lake."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import subprocess
import warnings
from collections.abc import Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas
import pytest
from pydantic import SecretStr
from pyhive import hive
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.config import Settings, SqlServerConfig
from icetide.devkit.embedded.process import free_port
from icetide.runtime.jars import pyspark_jars_dir
from icetide.serving.thrift import SqlServer

pytestmark = pytest.mark.spark

SEED_QUERIES = (
    "select * from ods_behavior.clickevent limit 100",
    "SELECT productId, name, product_price, count(*) AS views FROM ods_behavior.clickevent "
    "GROUP BY productId, name, product_price",
)
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$")
PROMPT = re.compile(r"^\d+: jdbc:hive2://\S+> ?")


@pytest.fixture(scope="module")
def clicks(spark: SparkSession) -> None:
    """A small ``ods_behavior.clickevent`` shaped like the pipeline's."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ods_behavior")
    spark.sql("DROP TABLE IF EXISTS lake.ods_behavior.clickevent")
    spark.sql("""CREATE TABLE lake.ods_behavior.clickevent (webpageId int, uid string,
        productId string, cookieId string, expendTime int, updateTime bigint, name string,
        product_price decimal(10,4), eventTime timestamp, dt string)
        USING iceberg PARTITIONED BY (days(eventTime))""")
    spark.sql("""INSERT INTO lake.ods_behavior.clickevent
        SELECT id % 7, concat('u', id % 5), concat('p', id % 4), concat('c', id), id * 10,
               1700000000000 + id * 1000, if(id % 4 = 3, null, concat('product ', id % 4)),
               if(id % 4 = 3, null, CAST(9.99 + id % 4 AS decimal(10,4))),
               timestamp_millis(1700000000000 + id * 1000), '20231114'
        FROM range(60)""")


def _norm(rows: Sequence[Sequence[Any]]) -> list[tuple[str, ...]]:
    """Rows as sorted tuples of text: clients render timestamps and decimals as text."""
    def text(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, Decimal):
            return str(v.normalize())
        if hasattr(v, "isoformat"):
            return v.isoformat(sep=" ")
        if isinstance(v, str) and TIMESTAMP.match(v):  # JDBC prints "…:20.0"
            return datetime.fromisoformat(v).isoformat(sep=" ")
        return str(Decimal(v).normalize()) if _decimal_text(v) else str(v)

    return sorted(tuple(text(v) for v in row) for row in rows)


def _decimal_text(v: Any) -> bool:
    if not isinstance(v, str) or "." not in v:
        return False
    with contextlib.suppress(ArithmeticError):
        Decimal(v)
        return True
    return False


@contextlib.contextmanager
def _served(settings: Settings, host: str = "127.0.0.1") -> Iterator[SqlServer]:
    with Context(settings).serve_sql(host=host, port=free_port()) as server:
        yield server


def _pyhive(server: SqlServer, query: str, **login: Any) -> list[tuple[Any, ...]]:
    conn = hive.connect(host=server.host, port=server.port, **login)
    try:
        cursor = conn.cursor()
        cursor.execute(query)
        return list(cursor.fetchall())
    finally:
        conn.close()


def test_pyhive_sees_the_lake_by_name_like_icetide_sql(
        icetide_settings: Settings, clicks: None) -> None:
    ctx = Context(icetide_settings)
    with _served(icetide_settings) as server:
        assert server.jdbc_url == f"jdbc:hive2://127.0.0.1:{server.port}/default"
        assert server.auth == "none"
        for query in SEED_QUERIES:
            expected = ctx.sql(query).rows
            got = _pyhive(server, query, username="anyone")
            assert len(got) == len(expected) > 0
            assert _norm(got) == _norm(expected)
        assert _pyhive(server, "select current_catalog()", username="x") == [("lake",)]
        with contextlib.closing(hive.connect(host=server.host, port=server.port,
                                             username="x")) as conn, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # pandas: "only SQLAlchemy ..."
            frame = pandas.read_sql(SEED_QUERIES[1], conn)
        assert sorted(frame["views"]) == sorted(r[3] for r in ctx.sql(SEED_QUERIES[1]).rows)
    assert not Path("metastore_db").exists() and not Path("derby.log").exists()


def _beeline(server: SqlServer, query: str, *login: str) -> subprocess.CompletedProcess[str]:
    spark_home = pyspark_jars_dir().parent
    cmd = [str(spark_home / "bin" / "beeline"), "-u", server.jdbc_url, *login,
           "--outputformat=csv2", "--silent=true", "-e", query]
    env = {**os.environ, "SPARK_HOME": str(spark_home)}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180,
                          check=False)


def _csv(out: str) -> list[list[str]]:
    """beeline's csv2 output without the prompt it echoes when not on a terminal."""
    lines = [PROMPT.sub("", line) for line in out.splitlines()]
    return list(csv.reader(io.StringIO("\n".join(line for line in lines if line.strip()))))


def test_beeline_logs_in_with_the_password_and_a_wrong_one_is_refused(
        icetide_settings: Settings, clicks: None) -> None:
    secured = icetide_settings.model_copy(update={"sql_server": SqlServerConfig(
        user="analyst", password=SecretStr("s3cret-pw"))})
    ctx = Context(icetide_settings)
    with _served(secured) as server:
        assert server.auth == "password"
        done = _beeline(server, ";\n".join(SEED_QUERIES), "-n", "analyst", "-p", "s3cret-pw")
        assert done.returncode == 0, done.stderr[-2000:]
        out = _csv(done.stdout)
        split = next(i for i, row in enumerate(out) if row[0] == "productId")
        for query, [header, *rows] in zip(SEED_QUERIES, (out[:split], out[split:]),
                                           strict=True):
            expected = ctx.sql(query)
            assert header == expected.columns
            got = [[None if v == "" else v for v in row] for row in rows]
            assert len(got) == len(expected.rows) > 0
            assert _norm(got) == _norm(expected.rows)

        refused = _beeline(server, "select 1", "-n", "analyst", "-p", "wrong")
        assert refused.returncode != 0
        assert "Error validating the login" in refused.stdout + refused.stderr
        with pytest.raises(Exception, match="Error validating the login"):
            _pyhive(server, "select 1", username="analyst", password="wrong", auth="CUSTOM")
        with pytest.raises(Exception, match="Error validating the login"):
            _pyhive(server, "select 1", username="root", password="s3cret-pw", auth="CUSTOM")
        assert _pyhive(server, "select count(*) from ods_behavior.clickevent",
                       username="analyst", password="s3cret-pw", auth="CUSTOM") == [(60,)]
