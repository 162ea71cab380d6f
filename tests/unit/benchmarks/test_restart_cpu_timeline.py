"""benchmarks.restart.cpu_timeline: CPU per part of a process tree over time (real
processes, no pipeline)."""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks.cpu import descendants
from benchmarks.restart.cpu_timeline import PARTS, PY_DRIVER, PY_WORKERS, CpuTimeline

#: burns ``n`` CPU seconds, then sleeps
BURN = "end = time.process_time() + {n}\nwhile time.process_time() < end: pass\n"
CHILD = "import time\n" + BURN.format(n=0.6) + "time.sleep(30)\n"
#: a driver that starts a child burning 0.6 s and burns 0.3 s itself
DRIVER = (f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {CHILD!r}])\n"
          + BURN.format(n=0.3) + "time.sleep(30)\n")


def test_the_driver_and_its_children_are_told_apart_and_read_at_a_moment() -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER])
    try:
        with CpuTimeline(driver.pid) as timeline:
            before = time.time()
            for _ in range(100):  # until both burnt their share
                time.sleep(0.1)
                now = timeline.at(time.time())
                if now[PY_DRIVER] >= 0.25 and now[PY_WORKERS] >= 0.5:  # clock ticks
                    break
        assert set(now) == set(PARTS)
        assert 0.25 <= now[PY_DRIVER] < 2 and 0.5 <= now[PY_WORKERS] < 3
        assert all(now[p] == 0 for p in PARTS if p not in (PY_DRIVER, PY_WORKERS))
        assert timeline.at(before - 60) == dict.fromkeys(PARTS, 0.0)  # before any sample
        assert timeline.at(before + 0.05)[PY_WORKERS] <= now[PY_WORKERS]
    finally:
        for pid in reversed(descendants(driver.pid)):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        driver.wait()
