"""The seed's shop database in MySQL/MariaDB (seed 001: ``user_db.products``, ``user_member``)."""

from __future__ import annotations

import pymysql
from pymysql.cursors import Cursor

from icetide.devkit.gen.seed_rows import MYSQL_DDL, PRODUCTS, USER_MEMBERS


def seed_shop(conn: pymysql.Connection[Cursor], database: str = "user_db") -> None:
    """(Re)create ``database`` with the seed's products (9 rows) and user_member (5 rows).

    The seed spells the member column both ways: ``memberLevel`` in its MySQL DDL,
    ``member_level`` in its Flink tables and its ``update user_member set member_level``.
    This uses ``memberLevel``, the MySQL DDL's name (seed_rows.MYSQL_DDL), so CDC carries
    that name into ``dim_db.user_member`` and every table downstream.
    """
    db = "`" + database.replace("`", "``") + "`"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
        cur.execute(f"USE {db}")
        cur.execute("DROP TABLE IF EXISTS products, user_member")
        for ddl in MYSQL_DDL:
            cur.execute(ddl)
        cur.executemany("INSERT INTO products VALUES (%s, %s, %s, %s, now())", list(PRODUCTS))
        cur.executemany(
            "INSERT INTO user_member VALUES (%s, %s, %s, %s, now())", list(USER_MEMBERS)
        )
    conn.commit()
