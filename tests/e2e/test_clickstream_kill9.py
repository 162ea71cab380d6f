"""The whole system under kill -9: clicks AND business updates flowing, real everything.

`icetide run examples/clickstream --conf clickstream.dims=cdc` runs every flow of the
example — Kafka → ``ods_behavior.clickevent`` (+ DLQ), MariaDB ``user_db`` → ``dim_db.*``
by CDC, and the layers ``dwd → dws → ads`` — against Apache Kafka (KRaft, started here;
the heavy e2e runs on the real broker only), a private MariaDB,
real Spark and real Iceberg. While clicks (2 % malformed) are produced and a second
thread changes prices and member levels and adds and removes members, the process group
(JVM included) is SIGKILLed at random moments at least four times, each time after the
run committed a batch, and restarted. After a final ``--once`` drain:

* mid-run, between two kills, the test erases a user at ODS and corrects a product's
  clicks (as a data engineer would, with SQL from another process): the kills that follow
  land while those changes propagate through DWD and DWS;
* ODS holds exactly the produced offsets less the erased ones: target ∪ DLQ, none twice;
* ``dim_db.products`` / ``dim_db.user_member`` equal MariaDB row for row;
* ``dwd.click_wide``, ``dws.product_views``, ``dws.user_profile`` and
  ``ads.daily_product_report`` equal a from-scratch recomputation over ODS and the
  dimensions (``icetide.devkit.demo.reconcile``).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.devkit.demo.edits import Edit, correct_product, erase_user
from icetide.devkit.demo.reconcile import (
    Check,
    check_edit,
    reconcile_dims,
    reconcile_layers,
    reconcile_ods,
)
from icetide.devkit.embedded.kafka import EmbeddedKafka
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.devkit.gen.business import BusinessOptions, BusinessReport, run_business_updates
from icetide.devkit.gen.clicks import GenOptions, GenReport, produce_clicks
from icetide.devkit.gen.seed_shop import seed_shop
from tests.e2e.pipeline_proc import (
    ANY_BATCH,
    ODS_BATCH,
    commits,
    drain,
    kill9,
    log_counts,
    pipeline_env,
    start,
    wait_running,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(2400)]  # a hang guard, not a budget

KILLS = 4  # × a JVM start each; CI aims at < 40 min in all
CLICKS = GenOptions(count=16_000, rate=200, bad_ratio=0.02, seed=7)  # ≈ 80 s of clicks
BUSINESS_RATE = 5.0
#: What the restarts had to do (counted in the run logs, printed): finish a batch whose
#: side table (changelog, dead letters) committed before the kill; retry a failed batch.
RESTART_WORK = ("finishing half-committed batch", "batch failed")
#: Tables whose commits between the kills show that the kills interrupted running work.
KILLED_TABLES = ("ods_behavior.clickevent", "dim_db.products", "dwd.click_wide",
                 "dws.product_user", "dws.product_views")


@pytest.fixture()
def lake(tmp_path: Path, spark: SparkSession) -> Iterator[tuple[Path, str]]:
    """A private ICETIDE_HOME whose catalog service (the default, started by the first run
    and surviving its kills) the test session reads as catalog `e2e`."""
    home = tmp_path / "home"
    warehouse = home / "warehouse"
    port = os.environ["ICETIDE_METASTORE__PORT"]
    spark.conf.set("spark.sql.catalog.e2e", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.e2e.type", "hive")
    spark.conf.set("spark.sql.catalog.e2e.uri", f"thrift://127.0.0.1:{port}")
    spark.conf.set("spark.sql.catalog.e2e.warehouse", str(warehouse))
    spark.conf.set("spark.sql.catalog.e2e.cache-enabled", "false")
    yield home, "e2e"


@pytest.fixture()
def shop(tmp_path: Path) -> Iterator[MariaDBInfo]:
    """A private MariaDB holding the seed's ``user_db`` (the session server's user_db is
    shared with other tests)."""
    with EmbeddedMariaDB(tmp_path / "mariadb") as info:
        conn = info.connect()
        try:
            seed_shop(conn, "user_db")
        finally:
            conn.close()
        yield info


class Producers:
    """Clicks to Kafka and business updates to MariaDB, each in its own thread, until
    ``finish()`` (clicks: or until ``clicks.count`` were sent)."""

    def __init__(self, bootstrap: str, shop: MariaDBInfo, clicks: GenOptions = CLICKS) -> None:
        self.clicks: list[GenReport] = []
        self.changes: list[BusinessReport] = []
        self.stop = threading.Event()
        self._click_thread = threading.Thread(target=lambda: self.clicks.append(
            produce_clicks(bootstrap, "clicktopic", clicks, stop=self.stop)))
        self._business_thread = threading.Thread(target=lambda: self.changes.append(
            run_business_updates(lambda: shop.connect("app"),
                                 BusinessOptions(rate=BUSINESS_RATE, seed=11), self.stop)))

    def start(self) -> None:
        self._click_thread.start()
        self._business_thread.start()

    def clicking(self) -> bool:
        return self._click_thread.is_alive()

    def finish(self) -> tuple[GenReport, BusinessReport]:
        self.stop.set()
        self._click_thread.join()
        self._business_thread.join()
        assert self.clicks and self.changes, "a producer thread failed (see its traceback)"
        return self.clicks[0], self.changes[0]


def _kill_cycles(env: dict[str, str], tmp: Path, producers: Producers,
                 edit: Callable[[int], None]) -> int:
    """Start, wait for a committed batch, kill -9 at a random moment; ≥ KILLS times and
    until every click was produced. ``edit(cycle)`` runs before each start."""
    rng = random.Random(20261122)
    kills = 0
    while kills < KILLS or producers.clicking():
        edit(kills)
        log = tmp / f"run-{kills}.log"
        proc = start(env, log, "--trigger-interval", "1", "--conf", "clickstream.dims=cdc")
        # Any flow's batch: once the last clicks are in ODS, a restart has no click to
        # commit, but CDC and the layers still commit (the business updates go on). The
        # first run waits for an ODS batch (clicks are still coming then), so ODS commits
        # between kills whatever the random kill points are.
        wait_running(proc, log, committed=ANY_BATCH if kills else ODS_BATCH)
        time.sleep(rng.uniform(0.0, 6.0))  # anywhere in planning, reading or committing
        kill9(proc)
        kills += 1
        assert kills < 40
    return kills


def test_kill9_whole_pipeline_equals_recomputation(
        tmp_path: Path, spark: SparkSession, lake: tuple[Path, str], shop: MariaDBInfo) -> None:
    home, cat = lake
    began = time.monotonic()
    with EmbeddedKafka(None, tmp_path / "broker") as broker:
        env = pipeline_env(home, broker.bootstrap, shop)
        producers = Producers(broker.bootstrap, shop)
        producers.start()
        edits: list[Edit] = []

        def edit(cycle: int) -> None:  # an erase, then a correction, before later starts
            todo = [erase_user, correct_product][len(edits):]
            if cycle and todo and spark.catalog.tableExists(f"{cat}.ods_behavior.clickevent"):
                made = todo[0](spark, cat)
                if made is not None:
                    edits.append(made)

        try:
            kills = _kill_cycles(env, tmp_path, producers, edit)
        finally:
            clicks, changes = producers.finish()
        during_kills = {t: commits(spark, f"{cat}.{t}") for t in KILLED_TABLES}
        killed_at = time.monotonic()
        drain(env, "--conf", "clickstream.dims=cdc")
    print(f"\nkills: {kills}, clicks: {clicks.valid} valid + {clicks.malformed} malformed, "
          f"business changes: {dict(changes.counts)}; kill cycles "
          f"{killed_at - began:.0f}s, drain {time.monotonic() - killed_at:.0f}s; "
          f"{log_counts(sorted(tmp_path.glob('run-*.log')), *RESTART_WORK)}")
    assert kills >= KILLS
    # each cycle was killed after some flow's commit (ANY_BATCH), which need not be ODS's:
    # a cold JVM's first ODS batch takes longest, and the layers below commit first
    assert sum(during_kills.values()) >= KILLS, f"too few commits between the kills: {during_kills}"
    assert during_kills["ods_behavior.clickevent"] >= 1, "ODS never committed between kills"
    assert clicks.delivery_errors == 0
    assert changes.total >= 100 and all(changes.counts[k] for k in ("price", "level", "insert"))
    assert [e.rows > 0 for e in edits] == [True, True], edits
    erased = sum(e.rows for e in edits if e.removes)
    _check_ods(spark, cat, clicks, erased)
    conn = shop.connect()
    try:
        checks = [*reconcile_ods(spark, cat, clicks.valid - erased, clicks.malformed),
                  *[check_edit(spark, cat, e) for e in edits],
                  *reconcile_dims(spark, cat, conn, database="user_db"),
                  *reconcile_layers(spark, cat)]
    finally:
        conn.close()
    _assert_all_ok(checks)


def _assert_all_ok(checks: list[Check]) -> None:
    for check in checks:
        print(check.line())
    bad = [c for c in checks if not c.ok]
    assert checks and not bad, "\n".join(f"{c.name}: {c.detail}" for c in bad)


def _check_ods(spark: SparkSession, cat: str, report: GenReport, erased: int) -> None:
    """Exactly-once at the source: every produced offset once, in the target or the DLQ,
    but for the ``erased`` ones."""
    target, dlq = f"{cat}.ods_behavior.clickevent", f"{cat}.ods_behavior.clickevent_dlq"
    rows = spark.sql(
        f"SELECT _kafka_partition p, _kafka_offset o FROM {target} "
        f"UNION ALL SELECT `partition` p, `offset` o FROM {dlq}").collect()
    seen = [(r.p, r.o) for r in rows]
    produced = report.valid + report.malformed
    assert len(seen) == len(set(seen)), "duplicated offsets"
    assert len(seen) == produced - erased, f"{produced - erased - len(seen)} events lost"
    by_part: dict[int, list[int]] = {}
    for p, o in seen:
        by_part.setdefault(p, []).append(o)
    gaps = sum(max(offsets) + 1 - len(offsets) for offsets in by_part.values())
    assert gaps == erased  # nothing skipped but the erased clicks
    assert spark.table(dlq).count() == report.malformed
    assert spark.table(target).count() == report.valid - erased
    joined = spark.sql(f"SELECT count(*) FROM {target} WHERE productId = '1' AND name = 'test01'")
    assert joined.collect()[0][0] > 0  # enrichment with dim_db.products happened
