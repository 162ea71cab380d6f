"""Random business updates on the seed's MySQL tables (``user_db.products``, ``user_member``).

The seed changes prices and member levels by hand (``update user_member set member_level
= 2 where userid = '555655'``; the column is ``memberLevel`` in its MySQL DDL, which this
follows) to show CDC at work; the demo and the end-to-end tests need
a steady stream of such changes while clicks flow. Each change is one autocommit
statement, picked at random:

* ``price``   — a product's ``product_price`` set to a new value (0.01–99.99);
* ``level``   — a member's ``memberLevel`` set to 1–9;
* ``insert``  — a new member (``userid`` ``9xxxxx``) joins;
* ``delete``  — a member added by this generator leaves (the seed's five stay, so the
  clicks of the seed users always find their member row).

:class:`BusinessReport` counts what was done, so tests can tell that updates flowed.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

import pymysql
from pymysql.cursors import Cursor

from icetide.devkit.gen.seed_rows import PRODUCTS, USER_MEMBERS
from icetide.runtime.interrupt import pause

log = logging.getLogger(__name__)

KINDS = ("price", "level", "insert", "delete")
WEIGHTS = (4, 4, 1, 1)


@dataclass(frozen=True)
class BusinessOptions:
    """How fast, for how long, and reproducibly or not."""

    rate: float = 2.0  # changes per second
    duration: float | None = None  # seconds; None: until stop is set
    count: int | None = None  # stop after this many changes
    seed: int | None = None
    database: str = "user_db"


@dataclass
class BusinessReport:
    """How many changes of each kind were committed."""

    counts: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class BusinessUpdates:
    """Makes one random change per :meth:`step` through ``conn`` (autocommit)."""

    def __init__(self, conn: pymysql.Connection[Cursor], options: BusinessOptions) -> None:
        self.conn, self.options = conn, options
        self.rng = random.Random(options.seed)
        self.report = BusinessReport()
        self._joined = self._existing_new_members()

    def _existing_new_members(self) -> list[str]:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT userid FROM `{self.options.database}`.user_member "
                        "WHERE userid LIKE '9%%'")
            return [str(row[0]) for row in cur.fetchall()]

    def step(self) -> str:
        """Commit one change; returns its kind."""
        kind = self.rng.choices(KINDS, WEIGHTS)[0]
        if kind == "delete" and not self._joined:
            kind = "insert"
        sql, args = getattr(self, f"_{kind}")()
        with self.conn.cursor() as cur:
            cur.execute(sql.replace("{db}", f"`{self.options.database}`"), args)
        self.report.counts[kind] += 1
        return str(kind)

    def _price(self) -> tuple[str, tuple[object, ...]]:
        product = self.rng.choice(PRODUCTS)[0]
        price = Decimal(self.rng.randint(1, 9999)) / 100
        return "UPDATE {db}.products SET product_price = %s WHERE productId = %s", (
            price, product)

    def _level(self) -> tuple[str, tuple[object, ...]]:
        userid = self.rng.choice([m[0] for m in USER_MEMBERS] + self._joined)
        return "UPDATE {db}.user_member SET memberLevel = %s WHERE userid = %s", (
            self.rng.randint(1, 9), userid)

    def _insert(self) -> tuple[str, tuple[object, ...]]:
        userid = f"9{self.rng.randrange(10**5):05d}"
        if userid not in self._joined:
            self._joined.append(userid)
        return ("REPLACE INTO {db}.user_member (userid, name, show_params, memberLevel) "
                "VALUES (%s, %s, %s, %s)", (userid, f"user{userid}", "label", 1))

    def _delete(self) -> tuple[str, tuple[object, ...]]:
        userid = self._joined.pop(self.rng.randrange(len(self._joined)))
        return "DELETE FROM {db}.user_member WHERE userid = %s", (userid,)


def run_business_updates(connect: Callable[[], pymysql.Connection[Cursor]],
                         options: BusinessOptions,
                         stop: threading.Event | None = None) -> BusinessReport:
    """Make changes at ``options.rate`` until the duration, the count or ``stop`` ends it;
    a stop request raises :class:`~icetide.runtime.interrupt.Interrupted`."""
    stop = stop or threading.Event()
    conn = connect()
    conn.autocommit(True)
    gen = BusinessUpdates(conn, options)
    start = time.monotonic()
    try:
        while not stop.is_set():
            if options.count is not None and gen.report.total >= options.count:
                break
            if options.duration is not None and time.monotonic() - start >= options.duration:
                break
            gen.step()
            due = start + gen.report.total / options.rate
            pause(max(0.0, due - time.monotonic()), stop)
    finally:
        conn.close()
    log.info("business updates: %s", dict(gen.report.counts))
    return gen.report
