"""The CDC hop's data: members in MariaDB's ``user_db.user_member``, and changes to them.

The seed's table has five members and changes by hand; a benchmark needs more: ``--members``
generated rows (``m0000000``, ``m0000001``, …) for the snapshot, updates of their
``memberLevel`` (each row image in the binlog is one change; a statement changes up to
1,000 consecutive members, as ``benchmarks.cdc`` does) for the binlog backlog and the
steady rate, and one probe row (``userid = 'probe'``) whose ``show_params`` is set to a
new value once a second: ``p<ms>`` with the time it was written, so the commit holding
that value in each engine's table says when the change became visible there.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pymysql
from pymysql.cursors import Cursor

from benchmarks.cpu import CpuMeter

Connect = Callable[[], "pymysql.Connection[Cursor]"]

TABLE = "user_db.user_member"
MEMBER = "m{:07d}"
PROBE = "probe"
BATCH = 1000
TICK_S = 0.1


def fill_members(conn: pymysql.Connection[Cursor], count: int) -> int:
    """Add ``count`` members and the probe row to the seed's; the rows the table holds."""
    with conn.cursor() as cur:
        for at in range(0, count, 10_000):
            rows = [(MEMBER.format(i), f"member{i}", f"label{i % 100:02d}", i % 9 + 1)
                    for i in range(at, min(at + 10_000, count))]
            cur.executemany(f"INSERT INTO {TABLE} (userid, name, show_params, memberLevel) "
                            "VALUES (%s, %s, %s, %s)", rows)
        cur.execute(f"INSERT INTO {TABLE} (userid, name, show_params, memberLevel) "
                    "VALUES (%s, 'probe', 'p0', 0)", (PROBE,))
        cur.execute(f"SELECT count(*) FROM {TABLE}")
        (rows_now,) = cur.fetchone() or (0,)
    conn.commit()
    return int(rows_now)


def ranges(first: int, count: int, members: int) -> list[tuple[int, int]]:
    """Inclusive index ranges of ``count`` consecutive members from ``first``, wrapping at
    ``members``, in statements of at most :data:`BATCH` rows."""
    out: list[tuple[int, int]] = []
    done = 0
    while done < count and members > 0:
        at = (first + done) % members
        size = min(BATCH, count - done, members - at)
        out.append((at, at + size - 1))
        done += size
    return out


def change_members(conn: pymysql.Connection[Cursor], count: int, members: int,
                   first: int = 0) -> int:
    """``count`` member updates (``memberLevel`` moved on by one) from member ``first``;
    the rows changed."""
    changed = 0
    with conn.cursor() as cur:
        for lo, hi in ranges(first, count, members):
            changed += cur.execute(
                f"UPDATE {TABLE} SET memberLevel = memberLevel %% 9 + 1 "
                "WHERE userid BETWEEN %s AND %s", (MEMBER.format(lo), MEMBER.format(hi)))
            conn.commit()
    return changed


def set_probe(conn: pymysql.Connection[Cursor], value: str) -> None:
    """Write ``value`` into the probe row (one change, committed)."""
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {TABLE} SET show_params = %s WHERE userid = %s", (value, PROBE))
    conn.commit()


def probe_value(produced_ms: int) -> str:
    return f"p{produced_ms}"


def _probe_loop(connect: Connect, stop: threading.Event, out: list[int]) -> None:
    """A probe change a second until ``stop``; its write time in ``out``."""
    conn = connect()
    try:
        while not stop.wait(1.0):
            produced = int(time.time() * 1000)
            set_probe(conn, probe_value(produced))
            out.append(produced)
    finally:
        conn.close()


def _changes_at(connect: Connect, rate: float, seconds: float, members: int,
                seed: int) -> int:
    """Member updates at ``rate`` a second for ``seconds``, a statement each tick from a
    random member; the rows changed."""
    rng = random.Random(seed)
    conn = connect()
    changed, owed = 0, 0.0
    began = time.monotonic()
    try:
        for tick in range(int(seconds / TICK_S)):
            owed += rate * TICK_S
            if int(owed) > 0:
                changed += change_members(conn, int(owed), members, rng.randrange(members))
                owed -= int(owed)
            time.sleep(max(0.0, began + (tick + 1) * TICK_S - time.monotonic()))
    finally:
        conn.close()
    return changed


def produce_changes(connect: Connect, rate: float, seconds: float, members: int, seed: int,
                    probes: list[int], meter: CpuMeter) -> tuple[int, dict[str, float]]:
    """Changes at ``rate`` for ``seconds`` with a probe change a second: rows changed
    (probes not counted), and the cores ``meter`` saw."""
    stop = threading.Event()
    prober = threading.Thread(target=_probe_loop, args=(connect, stop, probes), daemon=True)
    meter.start()
    began = time.monotonic()
    prober.start()
    changed = _changes_at(connect, rate, seconds, members, seed)
    stop.set()
    prober.join()
    cpu, elapsed = meter.stop(), time.monotonic() - began
    return changed, {k: v / elapsed for k, v in cpu.items()}


def server_pid(conn: pymysql.Connection[Cursor]) -> int | None:
    """The MariaDB server's process id (its pid file), for its CPU."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@pid_file")
        row = cur.fetchone()
    try:
        return int(Path(str(row[0])).read_text().strip()) if row else None
    except (OSError, ValueError):
        return None


def patient_server(conn: pymysql.Connection[Cursor]) -> None:
    """An hour before the server drops a replication client that does not read: the
    benchmark stops Flink's processes (SIGSTOP) while icetide has the machine."""
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL net_write_timeout = 3600")
        cur.execute("SET GLOBAL net_read_timeout = 3600")
