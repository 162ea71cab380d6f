"""Reconciliation of the seed pipeline's tables: what the lake holds vs what it should.

After a run (the demo, an end-to-end test, a suspicious production day) each check
recomputes a table from scratch and compares it with the incrementally maintained one:

* ODS — rows and dead letters equal what the generator produced (valid / malformed);
* dimensions — ``dim_db.products`` / ``dim_db.user_member`` (and, when the run writes
  it, seed 002's Hudi twin ``dim_db.user_member_hudi``) equal the MySQL tables row for
  row (timestamps compared as epoch seconds, decimals as text);
* layers — ``dwd.click_wide`` has exactly the ODS clicks; ``dws.product_views``,
  ``dws.user_profile`` and ``ads.daily_product_report`` equal a recomputation over ODS,
  DWD and the dimensions (see examples/clickstream/LAYERS.md for the semantics).

Each check returns a :class:`Check`: ``expected``/``actual`` are row counts (for a
comparison of row sets, ``actual`` counts the rows that differ from the recomputation
on either side; ``ok`` means none do).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pymysql.cursors import Cursor

from icetide.devkit.demo.edits import Edit, left_in_dwd
from icetide.tables.changelog import changelog_table_name
from icetide.tables.sql import quote_ident

if TYPE_CHECKING:
    import pymysql
    from pyspark.sql import SparkSession

ODS = "ods_behavior.clickevent"
DLQ = "ods_behavior.clickevent_dlq"
DWD = "dwd.click_wide"
DIMS = {"products": "dim_db.products", "user_member": "dim_db.user_member"}
#: The Hudi twin of ``user_member`` (examples/clickstream/dims.py, ``clickstream.hudi``).
HUDI_DIM = ("user_member", "dim_db.user_member_hudi")
CDC_COLUMNS = frozenset({"_cdc_pos", "_ts"})


@dataclass(frozen=True)
class Check:
    """One reconciliation: ``ok`` when the lake equals the expectation."""

    name: str
    ok: bool
    expected: int
    actual: int
    detail: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.name}: expected {self.expected}, got {self.actual} {self.detail}"


def _count(spark: SparkSession, sql: str) -> int:
    return int(spark.sql(sql).collect()[0][0])


def _rows(spark: SparkSession, sql: str) -> set[tuple[object, ...]]:
    return {tuple(r) for r in spark.sql(sql).collect()}


def _compare(
    name: str, expected: set[tuple[object, ...]], actual: set[tuple[object, ...]],
) -> Check:
    """Two row sets (small: dimension tables) compared on the driver."""
    missing, extra = expected - actual, actual - expected
    return _result(name, len(expected), sorted(missing, key=repr)[:3], len(missing),
                   sorted(extra, key=repr)[:3], len(extra))


def _compare_sql(spark: SparkSession, name: str, expected: str, actual: str) -> Check:
    """Two queries compared as multisets in Spark (``EXCEPT ALL`` both ways)."""
    missing = spark.sql(f"({expected}) EXCEPT ALL ({actual})").cache()
    extra = spark.sql(f"({actual}) EXCEPT ALL ({expected})").cache()
    try:
        return _result(name, _count(spark, f"SELECT count(*) FROM ({expected})"),
                       [tuple(r) for r in missing.take(3)], missing.count(),
                       [tuple(r) for r in extra.take(3)], extra.count())
    finally:
        missing.unpersist()
        extra.unpersist()


def _result(name: str, expected: int, missing: list[tuple[object, ...]], n_missing: int,
            extra: list[tuple[object, ...]], n_extra: int) -> Check:
    detail = ""
    if n_missing or n_extra:
        detail = (f"({n_missing} rows missing, e.g. {missing}; "
                  f"{n_extra} unexpected, e.g. {extra})")
    return Check(name, not (n_missing or n_extra), expected, expected - n_missing + n_extra,
                 detail)


def reconcile_ods(spark: SparkSession, catalog: str, valid: int, invalid: int) -> list[Check]:
    """ODS rows = ``valid`` events produced; dead letters = ``invalid`` ones."""
    rows = _count(spark, f"SELECT count(*) FROM {catalog}.{ODS}")
    dlq = _count(spark, f"SELECT count(*) FROM {catalog}.{DLQ}")
    return [Check("ODS rows = valid events produced", rows == valid, valid, rows),
            Check("DLQ rows = malformed events produced", dlq == invalid, invalid, dlq)]


# --- dimensions vs MySQL ---------------------------------------------------------------

def _mysql_columns(conn: pymysql.Connection[Cursor], database: str, table: str
                   ) -> list[tuple[str, str]]:
    with conn.cursor() as cur:
        cur.execute("SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                    (database, table))
        return [(str(n), str(t).lower()) for n, t in cur.fetchall()]


def _mysql_rows(conn: pymysql.Connection[Cursor], database: str, table: str,
                columns: list[tuple[str, str]]) -> set[tuple[object, ...]]:
    exprs = [f"UNIX_TIMESTAMP(`{c}`)" if t == "timestamp" else f"CAST(`{c}` AS CHAR)"
             for c, t in columns]
    with conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(exprs)} FROM `{database}`.`{table}`")
        return {tuple(None if v is None else str(int(v) if isinstance(v, float) else v)
                      for v in row) for row in cur.fetchall()}


def _lake_rows(spark: SparkSession, ident: str, columns: list[tuple[str, str]]
               ) -> set[tuple[object, ...]]:
    exprs = [f"CAST(unix_timestamp({quote_ident(c)}) AS STRING)" if t == "timestamp"
             else f"CAST({quote_ident(c)} AS STRING)" for c, t in columns]
    return _rows(spark, f"SELECT {', '.join(exprs)} FROM {ident}")


def reconcile_dims(spark: SparkSession, catalog: str, conn: pymysql.Connection[Cursor],
                   database: str = "user_db", *, hudi: bool = False) -> list[Check]:
    """``dim_db.products`` / ``dim_db.user_member`` (``hudi``: and the Hudi twin
    ``dim_db.user_member_hudi``, read from its files) equal the MySQL tables row for row."""
    checks = []
    pairs = [(table, lake, f"{catalog}.{lake}") for table, lake in DIMS.items()]
    if hudi:
        pairs.append((*HUDI_DIM, _hudi_view(spark, f"{catalog}.{HUDI_DIM[1]}")))
    for table, lake, read in pairs:
        columns = [c for c in _mysql_columns(conn, database, table) if c[0] not in CDC_COLUMNS]
        checks.append(_compare(f"{lake} = MySQL {database}.{table}",
                               _mysql_rows(conn, database, table, columns),
                               _lake_rows(spark, read, columns)))
    return checks


def _hudi_view(spark: SparkSession, ident: str) -> str:
    """A temporary view of the Hudi table ``ident``'s rows (a snapshot read of its files:
    merge-on-read logs merged), named for :func:`_lake_rows`."""
    from icetide.lake import hudi

    table = hudi.HudiTable(ident, hudi.default_path(spark, ident), (), hudi.ORDERING)
    view = "icetide_reconcile_" + ident.replace(".", "_")
    hudi.read(spark, table).createOrReplaceTempView(view)
    return view


# --- layers vs recomputation -----------------------------------------------------------

def _member_images(spark: SparkSession, catalog: str) -> str:
    """SQL of each member's newest attributes: the last after-image in the changelog (a
    deleted member keeps them in the profile), else the dimension's rows."""
    changelog = f"{catalog}.{changelog_table_name(DIMS['user_member'])}"
    if spark.catalog.tableExists(changelog):
        return (f"SELECT after.userid AS userid, after.name AS name, "
                f"after.memberLevel AS memberLevel FROM (SELECT *, row_number() OVER "
                f"(PARTITION BY coalesce(after.userid, before.userid) ORDER BY _seq DESC) AS rn "
                f"FROM {changelog} WHERE _op IN ('+I', '+U')) WHERE rn = 1")
    return f"SELECT userid, name, memberLevel FROM {catalog}.{DIMS['user_member']}"


def check_click_wide(spark: SparkSession, c: str) -> Check:
    cols = "uid, productId, cookieId, webpageId, expendTime, updateTime, dt"
    return _compare_sql(spark, f"{DWD} = ODS clicks", f"SELECT {cols} FROM {c}.{ODS}",
                        f"SELECT {cols} FROM {c}.{DWD}")


def check_product_views(spark: SparkSession, c: str) -> list[Check]:
    counts = _compare_sql(
        spark, "dws.product_views (views, uv) = recomputation over ODS",
        f"SELECT productId, count(*), count(DISTINCT uid) FROM {c}.{ODS} GROUP BY productId",
        f"SELECT productId, views, uv FROM {c}.dws.product_views")
    stale = sum(_count(spark, (
        f"SELECT count(*) FROM {c}.dws.product_views v LEFT ANTI JOIN ({_newest(c, col)}) n "
        f"ON v.productId = n.productId AND v.{col} <=> n.v")) for col in ("name", "product_price"))
    total = _count(spark, f"SELECT count(*) FROM {c}.dws.product_views")
    return [counts, Check("dws.product_views (name, price) = newest click's enrichment",
                          stale == 0, total, total - stale,
                          f"({stale} products with another enrichment)" if stale else "")]


def _newest(c: str, column: str) -> str:
    """Per product, the values of ``column`` in its newest clicks (ties on updateTime)
    where it is not NULL; NULL for a product none of whose clicks has one."""
    col = quote_ident(column)
    return (f"SELECT w.productId, w.{col} AS v FROM {c}.{DWD} w JOIN (SELECT productId, "
            f"max(updateTime) AS t FROM {c}.{DWD} WHERE {col} IS NOT NULL GROUP BY productId) x "
            f"ON w.productId = x.productId AND w.updateTime = x.t AND w.{col} IS NOT NULL "
            f"UNION ALL SELECT productId, NULL FROM {c}.{DWD} GROUP BY productId "
            f"HAVING count({col}) = 0")


def check_user_profile(spark: SparkSession, c: str) -> Check:
    expected = (
        "SELECT coalesce(a.uid, m.userid), a.clicks, a.expend_time, a.last_click, m.name, "
        "m.memberLevel FROM (SELECT uid, count(*) clicks, sum(coalesce(expendTime, 0)) "
        "expend_time, "
        f"max(eventTime) last_click FROM {c}.{ODS} WHERE uid IS NOT NULL GROUP BY uid) a "
        f"FULL JOIN ({_member_images(spark, c)}) m ON a.uid = m.userid")
    actual = ("SELECT uid, clicks, expend_time, last_click, member_name, memberLevel "
              f"FROM {c}.dws.user_profile")
    return _compare_sql(spark, "dws.user_profile = recomputation over ODS + members",
                        expected, actual)


def check_daily_report(spark: SparkSession, c: str) -> Check:
    return _compare_sql(
        spark, "ads.daily_product_report = recomputation over ODS",
        "SELECT dt, productId, count(*), count(DISTINCT uid), "
        f"round(avg(expendTime), 6) FROM {c}.{ODS} GROUP BY dt, productId",
        "SELECT dt, productId, pv, uv, round(avg_expend_time, 6) "
        f"FROM {c}.ads.daily_product_report")


def check_intermediate(spark: SparkSession, c: str) -> list[Check]:
    """The DWS tables the others are built from: each pair seen, each user's counters."""
    pairs = _compare_sql(
        spark, "dws.product_user = (product, user) pairs of DWD",
        f"SELECT productId, uid, min(eventTime) FROM {c}.{DWD} WHERE uid IS NOT NULL "
        "GROUP BY productId, uid",
        f"SELECT productId, uid, first_seen FROM {c}.dws.product_user")
    activity = _compare_sql(
        spark, "dws.user_activity = recomputation over ODS",
        f"SELECT uid, count(*), sum(coalesce(expendTime, 0)), max(eventTime) FROM {c}.{ODS} "
        "WHERE uid IS NOT NULL GROUP BY uid",
        f"SELECT uid, clicks, expend_time, last_click FROM {c}.dws.user_activity")
    return [pairs, activity]


def reconcile_layers(spark: SparkSession, catalog: str) -> list[Check]:
    """DWD, DWS and ADS of examples/clickstream against a from-scratch recomputation."""
    return [check_click_wide(spark, catalog), *check_intermediate(spark, catalog),
            *check_product_views(spark, catalog), check_user_profile(spark, catalog),
            check_daily_report(spark, catalog)]


def check_edit(spark: SparkSession, catalog: str, edit: Edit) -> Check:
    """None of the rows an edit at ODS removed or rewrote is left in DWD as it was: DWD
    holds as many clicks matching the edit as ODS does (those ingested after it)."""
    dwd, ods = left_in_dwd(spark, catalog, edit)
    verb = "erased" if edit.removes else "corrected"
    return Check(f"{edit.name}: {edit.rows} clicks {verb} at ODS, none left in {DWD}",
                 dwd == ods, ods, dwd,
                 "" if dwd == ods else f"({dwd - ods} edited clicks still in {DWD})")


def all_ok(checks: Iterable[Check]) -> bool:
    """Whether every check passed."""
    return all(check.ok for check in checks)
