"""Random business updates against a real MariaDB: every change lands, seed members stay."""

from __future__ import annotations

import threading

import pytest

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.business import BusinessOptions, run_business_updates
from icetide.devkit.gen.seed_rows import PRODUCTS, USER_MEMBERS
from icetide.devkit.gen.seed_shop import seed_shop

pytestmark = pytest.mark.mariadb


def test_business_updates_change_the_seed_tables(mariadb: MariaDBInfo) -> None:
    conn = mariadb.connect("app")
    seed_shop(conn, "biz_db")
    report = run_business_updates(lambda: mariadb.connect("app"),
                                  BusinessOptions(rate=500, count=200, seed=7, database="biz_db"),
                                  threading.Event())
    assert report.total == 200 and set(report.counts) == {"price", "level", "insert", "delete"}
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM biz_db.products WHERE product_price <> 11.11")
        changed = cur.fetchone()[0]
        cur.execute("SELECT userid FROM biz_db.user_member")
        members = {r[0] for r in cur.fetchall()}
    assert 0 < changed <= len(PRODUCTS)
    assert {m[0] for m in USER_MEMBERS} <= members  # the seed's users never leave
    joined = members - {m[0] for m in USER_MEMBERS}
    assert all(u.startswith("9") for u in joined)
    assert len(joined) <= report.counts["insert"] - report.counts["delete"]
    conn.close()


def test_business_updates_stop_on_event(mariadb: MariaDBInfo) -> None:
    conn = mariadb.connect("app")
    seed_shop(conn, "biz_stop")
    conn.close()
    stop = threading.Event()
    stop.set()
    report = run_business_updates(lambda: mariadb.connect("app"),
                                  BusinessOptions(rate=1, database="biz_stop"), stop)
    assert report.total == 0
