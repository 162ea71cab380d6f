"""`icetide maintain` over a Hudi merge-on-read CDC target: compaction turns its log files
into base files, cleaning and archival remove older commits and file slices but never the
commit a downstream flow reading the table incrementally still needs; that flow then
reads on from it, each change exactly once.

Real everything: the session's MariaDB (binlog), ``icetide run --once`` and ``icetide
maintain`` subprocesses with ``spark.hudi`` on the default catalog (icetide's metastore
in a private home); the table's timeline is read from its files here, the consumer's log
by name with pyiceberg (no JVM for either)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cdc_pipeline_helpers as helpers
import pytest
from test_hudi_downstream import COLS, FLOWS, _fold, _log, _run

from icetide.config import load_settings
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.lake.hudi_timeline import HudiTimeline
from icetide.sources.mysql.schema import quote_table

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.timeout(2400)]

TARGET_ONLY = FLOWS.split("\n\n@dp.table")[0] + "\n"


def _maintain(env: dict[str, str], table: str, *flags: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "icetide.cli", "maintain", table, *flags,
                           "--format", "json"], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [report] = json.loads(done.stdout)
    assert report["format"] == "hudi"
    found: dict[str, Any] = report
    return found


def _change(info: MariaDBInfo, table: str, round_: int) -> None:
    """Updates (a third of the rows), a delete and an insert."""
    t = quote_table(table)
    helpers.execute(info, f"UPDATE {t} SET qty = qty + 100 WHERE id % 3 = {round_ % 3}",
                    f"DELETE FROM {t} WHERE id = {round_ + 1}",
                    f"INSERT INTO {t} VALUES ({100 + round_}, 'new', 1, 2.5, NOW(), NULL)")


@dataclass(frozen=True)
class _Case:
    """A MariaDB table, the pipelines following it (``both``: the CDC flow into the Hudi
    target and the consumer logging its changes; ``target``: the CDC flow alone)."""

    tmp: Path
    info: MariaDBInfo
    db: str
    lake_db: str
    settings: dict[str, str]  # ICETIDE_* of every command
    items: str  # the MariaDB table, db.items
    table: str  # the Hudi target, lake_db.items

    @property
    def env(self) -> dict[str, str]:
        """The commands' environment (read now: a pipeline puts its password there)."""
        return {**os.environ, **self.settings}

    @property
    def path(self) -> str:
        return f"{load_settings(None, environ=self.env).warehouse}/{self.lake_db}.db/items"

    def pipeline(self, name: str, trigger: str = "2s") -> Path:
        flows = (FLOWS if name == "both" else TARGET_ONLY).format(db=self.db,
                                                                   lake_db=self.lake_db)
        return helpers.write_pipeline(self.tmp / name, self.info, self.lake_db, flows,
                                      chunk_size=5, max_records=5, trigger=trigger)


def _case(tmp_path: Path, mariadb: MariaDBInfo, prefix: str, **settings: str) -> _Case:
    db = helpers.create_database(mariadb, prefix)
    env = {"ICETIDE_HOME": str(tmp_path / "home"),
           "ICETIDE_SPARK__MASTER": "local[2]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
           "ICETIDE_SPARK__HUDI": "true", "ICETIDE_MAINTENANCE__SNAPSHOT_RETENTION": "0",
           "ICETIDE_MAINTENANCE__RETAIN_LAST": "1", **settings}
    lake_db = helpers.unique(prefix)
    return _Case(tmp_path, mariadb, db, lake_db, env, helpers.create_items(mariadb, db, 30),
                 f"{lake_db}.items")


def _logged_once(case: _Case, mariadb: MariaDBInfo) -> None:
    """The consumer's log holds each change once and folds to the MariaDB table."""
    log = _log(case.env, case.lake_db)
    assert len(log) == len(set(log))
    assert _fold(log) == {r[:4] for r in helpers.mysql_rows(mariadb, case.items, COLS[:4])}


def _first_pass_kept_the_consumers_commit(done: dict[str, Any], consumed: list[str],
                                          path: str) -> str:
    """After the pass: compacted, older commits archived, the consumer's kept; its commit."""
    after = HudiTimeline(path).writes()
    assert "compaction" in done["actions"] and done["after"]["pending_log_files"] == 0
    assert done["after"]["base_files"] > done["before"]["base_files"]
    assert after[-1].action == "commit"  # the compaction, on a merge-on-read table
    kept = done["actions"]["archive"]["kept_for_flows"]
    needed = next(instant for instant, who in kept.items() if "items_log" in who)
    assert needed in consumed and needed in {i.completed for i in after}
    assert consumed[0] not in {i.completed for i in after}  # older commits archived
    assert done["actions"]["archive"]["commits"] >= 2
    assert [i.completed for i in after if i.completed < needed] == [
        c for c in consumed if c < needed][-1:]  # one older than it: Hudi keeps one more
    return str(needed)


def test_maintain_compacts_a_hudi_table_and_keeps_the_commit_a_consumer_needs(
        tmp_path: Path, mariadb: MariaDBInfo) -> None:
    case = _case(tmp_path, mariadb, "hm")
    both, target = case.pipeline("both"), case.pipeline("target")
    # the snapshot (6 commits of 5 rows), then the consumer reads them all (flows run in
    # dependency order): its position is the newest commit
    _run(case.env, both)
    consumed = [i.completed for i in HudiTimeline(case.path).writes()]
    assert len(consumed) >= 6
    # upserts the consumer has not read: log files, in batches of 5 changes; one run (a
    # JVM start each) reads the three rounds
    for round_ in range(3):
        _change(mariadb, case.items, round_)
    _run(case.env, target)

    dry = _maintain(case.env, case.table, "--dry-run")
    before = [(i.completed, i.action) for i in HudiTimeline(case.path).instants()]
    assert dry["before"]["pending_log_files"] > 0
    assert dry["actions"]["compaction"]["log_files"] == dry["before"]["pending_log_files"]
    assert [(i.completed, i.action) for i in HudiTimeline(case.path).instants()] == before
    needed = _first_pass_kept_the_consumers_commit(
        _maintain(case.env, case.table), consumed, case.path)
    _run(case.env, both)  # the consumer reads on from its position: every change once
    _logged_once(case, mariadb)

    for round_ in (3, 4):  # two consumer batches after the compaction (its newest marker
        _change(mariadb, case.items, round_)  # starts and ends after it): nothing needs
        _run(case.env, both)  # the file slices before the compaction any more
    again = _maintain(case.env, case.table)
    assert again["actions"]["clean"]["files"] > 0
    # a compaction removes no file; the clean removed the old slices' log files
    assert again["after"]["log_files"] < again["before"]["log_files"]
    assert needed not in {i.completed for i in HudiTimeline(case.path).writes()}
    _logged_once(case, mariadb)


def _run_until_maintained(case: _Case, mariadb: MariaDBInfo, out: Path) -> None:
    """``icetide run`` (continuous) while MariaDB changes (three rounds), until its
    schedule compacted and archived the Hudi target; meanwhile ``icetide maintain`` from
    another process yields to it (Hudi's services run beside its one writer); then
    SIGTERM."""
    with out.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "icetide.cli", "run",
                                 str(case.tmp / "both")],
                                env=case.env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline, tick = time.monotonic() + 900, 0
        while not _maintained(out.read_text(errors="replace"), "compaction", "archive"):
            assert proc.poll() is None, out.read_text()[-3000:]
            assert time.monotonic() < deadline, out.read_text()[-3000:]
            # a round of changes every 4th tick: log files to compact and commits for
            # archival to count (it needs more than keep.max in the active timeline),
            # with idle ticks between, as the schedule skips a table whose writer is in
            # a batch (a writer always behind would starve it)
            if tick % 4 == 0:
                _change(mariadb, case.items, tick // 4)
            tick += 1
            time.sleep(4)
        beside = _maintain(case.env, case.table)
        assert beside["actions"] == {}
        assert "writes lake." in beside["skipped"]["hudi services"]
        assert "in another process" in beside["skipped"]["hudi services"]
        proc.send_signal(signal.SIGTERM)  # stops after the current batches
        proc.wait(180)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_continuous_run_maintains_its_hudi_target_beside_the_flows(
        tmp_path: Path, mariadb: MariaDBInfo) -> None:
    """The run's own schedule compacts and archives the Hudi target while the CDC flow
    writes it and the consumer streams it (the pass holds the table's write lock), and
    `icetide maintain` from another process yields to the run; the consumer still logs
    every change once."""
    case = _case(tmp_path, mariadb, "hs", ICETIDE_MAINTENANCE__INTERVAL="5")
    both = case.pipeline("both", trigger="1s")
    _run_until_maintained(case, mariadb, tmp_path / "run.log")
    assert "commit" in {i.action for i in HudiTimeline(case.path).writes()}  # a compaction
    _run(case.env, both)  # the last changes, if the run stopped before reading them
    _logged_once(case, mariadb)


def _maintained(text: str, *steps: str) -> bool:
    """Whether the run printed passes over its Hudi table that did all of ``steps``."""
    done = " ".join(line for line in text.splitlines() if "maintained" in line and "(hudi)" in line)
    return all(f"{step} " in done for step in steps)
