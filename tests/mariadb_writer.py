"""A concurrent writer for the CDC tests: random changes on an ``items`` table of MariaDB.

Inserts, updates (also of the primary key), deletes, multi-statement and rolled-back
transactions on ``db.items`` (the tests' ``items`` DDL: id, name, qty, price, updated,
note), plus — with ``members`` — member-level updates of the seed's ``user_member``.
Runs until :meth:`Writer.stop`, which re-raises any error the thread met.
"""

from __future__ import annotations

import random
import threading
import time
from decimal import Decimal
from typing import Any

from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.sources.mysql.schema import quote_table


class Writer(threading.Thread):
    """Random changes on ``table`` (``db.items``) until stopped; ``ops`` counts them."""

    def __init__(self, info: MariaDBInfo, table: str, next_id: int, *, seed: int = 7,
                 pause: float = 0.002, members: str | None = None) -> None:
        super().__init__(daemon=True)
        self.info, self.table, self.next_id = info, quote_table(table), next_id
        self.members = quote_table(members) if members else None
        self.rand = random.Random(seed)
        self.pause = pause
        self.stop_event = threading.Event()
        self.ops = 0
        self.error: BaseException | None = None

    def _one(self, cur: Any) -> None:
        r, t = self.rand.random(), self.table
        some = self.rand.randrange(1, self.next_id)
        if r < 0.3:
            self.next_id += 1
            cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s, %s, NOW(), %s)",
                        (self.next_id, f"new{self.next_id}", 1, Decimal("1.2345"), "w"))
        elif r < 0.65:
            cur.execute(f"UPDATE {t} SET qty = qty + 1, price = price + 0.0001, "
                        "updated = NOW(), note = CONCAT(note, '+') WHERE id = %s", (some,))
        elif r < 0.8:
            cur.execute(f"DELETE FROM {t} WHERE id = %s", (some,))
        elif r < 0.9 or self.members is None:
            self.next_id += 1
            cur.execute(f"UPDATE IGNORE {t} SET id = %s WHERE id = %s", (self.next_id, some))
        else:
            cur.execute(f"UPDATE {self.members} SET memberLevel = %s WHERE userid = '555655'",
                        (self.rand.randrange(100),))
        self.ops += 1

    def run(self) -> None:
        try:
            conn = self.info.connect()
            with conn.cursor() as cur:
                while not self.stop_event.is_set():
                    if self.rand.random() < 0.2:
                        conn.begin()
                        for _ in range(self.rand.randrange(2, 6)):
                            self._one(cur)
                        conn.rollback() if self.rand.random() < 0.2 else conn.commit()
                    else:
                        self._one(cur)
                    time.sleep(self.pause)  # a steady writer, not a benchmark
            conn.close()
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)
        if self.error is not None:
            raise self.error
