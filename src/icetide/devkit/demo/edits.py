"""The demo's corrections at ODS, made mid-run as a data engineer would: a GDPR erase of
one user and a correction of some clicks' product, straight into
``ods_behavior.clickevent`` with SQL while the clicks stream in and the flows run.

They are made right after the warm-up, in a phase of their own (``editing``): together
they rewrite about a third of what ODS holds after a minute, a bulk correction whose
propagation is reported (how long until every layer was back within its target, the
worst freshness meanwhile) but not judged against the targets, which are for the stream;
the measured window opens once every layer is back within its target.

Each edit is bounded by the newest event time it saw (``updateTime <= bound``), so clicks
the generator produces afterwards are not part of it, and the reconciliation can check
that DWD holds no more clicks matching the edit than ODS does (none of the edited rows
left behind; clicks from before the bound ingested after the edit are in both), beside
the recomputation of every layer over what ODS holds after the edits. A commit
conflict with the ODS flow's append is retried; the edit's own commit tells how many
rows it changed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tenacity import stop_after_attempt, wait_fixed

from icetide.lake import commit
from icetide.runtime.retry import retrying
from icetide.tables.sql import sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

ODS = "ods_behavior.clickevent"
#: Seconds between two looks at ODS while it holds too little to edit.
RETRY_S = 2.0
DWD = "dwd.click_wide"


@dataclass(frozen=True)
class Edit:
    """One change made at ODS: what it did and how to find what it touched."""

    name: str
    #: SQL condition on the clicks the edit removed or rewrote (as they were).
    touched: str
    #: Rows of ODS it removed (an erase) or rewrote (a correction).
    rows: int
    #: Whether the rows were removed (so ODS holds that many fewer).
    removes: bool


def _count(spark: SparkSession, sql: str) -> int:
    return int(spark.sql(sql).collect()[0][0])


def _run(spark: SparkSession, ident: str, statement: str) -> int:
    """Run ``statement`` (a DELETE or UPDATE of ``ident``); the rows its commit changed
    (found among the commits since, as the ODS flow may have appended after it)."""
    before = commit.read_metadata(spark, ident).current_snapshot_id
    retrying(commit.is_commit_conflict, wait=wait_fixed(0.5), stop=stop_after_attempt(10))(
        lambda: spark.sql(statement))
    for snap in commit.read_metadata(spark, ident).ancestors():
        if snap.snapshot_id == before:
            break
        if snap.operation in ("delete", "overwrite"):  # not a click batch, a compaction
            return sum(int(snap.summary.get(k, "0"))
                       for k in ("added-position-deletes", "deleted-records"))
    return 0


def erase_user(spark: SparkSession, catalog: str) -> Edit | None:
    """Delete every click so far of the user with the most clicks (a GDPR erase)."""
    ods = f"{catalog}.{ODS}"
    top = spark.sql(f"SELECT uid, max(updateTime) FROM {ods} GROUP BY uid "
                    "ORDER BY count(*) DESC, uid LIMIT 1").collect()
    if not top:
        return None
    uid, bound = str(top[0][0]), int(top[0][1])
    touched = f"uid = {sql_string(uid)} AND updateTime <= {bound}"
    rows = _run(spark, ods, f"DELETE FROM {ods} WHERE {touched}")
    log.info("demo: erased user %s at ODS (%d clicks)", uid, rows)
    return Edit(f"erase of user {uid}", touched, rows, removes=True)


def correct_product(spark: SparkSession, catalog: str) -> Edit | None:
    """Re-assign the clicks so far of the least-clicked product to the most-clicked one,
    with that product's name and price (a correction of a mis-tagged page)."""
    ods = f"{catalog}.{ODS}"
    ranked = spark.sql(f"SELECT productId, max(updateTime) FROM {ods} WHERE productId IS NOT "
                       "NULL GROUP BY productId ORDER BY count(*), productId").collect()
    if len(ranked) < 2:
        return None
    wrong, bound = str(ranked[0][0]), int(ranked[0][1])
    right = str(ranked[-1][0])
    touched = f"productId = {sql_string(wrong)} AND updateTime <= {bound}"
    rows = _run(spark, ods, (
        f"UPDATE {ods} SET productId = {sql_string(right)}, "
        f"name = (SELECT max(name) FROM {ods} WHERE productId = {sql_string(right)}), "
        f"product_price = (SELECT max(product_price) FROM {ods} "
        f"WHERE productId = {sql_string(right)}) WHERE {touched}"))
    log.info("demo: corrected %d clicks of product %s to %s at ODS", rows, wrong, right)
    return Edit(f"correction of product {wrong} to {right}", touched, rows, removes=False)


def left_in_dwd(spark: SparkSession, catalog: str, edit: Edit) -> tuple[int, int]:
    """Clicks matching the edit's condition in DWD and in ODS: equal when none of the rows
    it removed or rewrote is left downstream (clicks produced before its bound but
    ingested after it are in both)."""
    where = f"WHERE {edit.touched}"
    return (_count(spark, f"SELECT count(*) FROM {catalog}.{DWD} {where}"),
            _count(spark, f"SELECT count(*) FROM {catalog}.{ODS} {where}"))


class DemoEdits:
    """The edits, made by :meth:`make` once the warm-up is over (the demo's clock thread:
    the measured window opens after every layer is back within its target); :meth:`join`
    returns them, or raises what failed."""

    def __init__(self, spark: SparkSession, catalog: str, stop: threading.Event) -> None:
        self.spark, self.catalog, self.stop = spark, catalog, stop
        self.done: list[Edit] = []
        self.error: BaseException | None = None

    def make(self) -> bool:
        """Each edit as soon as ODS holds what it needs (a slow start may not have
        committed clicks yet), until the run stops; whether every edit was made."""
        todo = [erase_user, correct_product]
        try:
            while todo and not self.stop.is_set():
                made = (todo[0](self.spark, self.catalog)
                        if self.spark.catalog.tableExists(f"{self.catalog}.{ODS}") else None)
                if made is None:
                    self.stop.wait(RETRY_S)
                    continue
                self.done.append(made)
                todo.pop(0)
        except BaseException as exc:  # reported by join(); the demo then fails
            log.error("demo edit failed: %s", exc)
            self.error = exc
        return not todo and self.error is None

    def join(self) -> list[Edit]:
        """The edits made; raises the error that stopped them."""
        if self.error is not None:
            raise self.error
        return list(self.done)
