"""benchmarks.cpu: CPU seconds per process role, from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks.cpu import (
    JVM_DRIVER,
    JVM_PARTS,
    CpuMeter,
    JvmThreadMeter,
    cpu_seconds,
    descendants,
    jvm_thread_part,
)

BUSY = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n" \
       "time.sleep(30)"


def test_a_busy_child_is_found_below_its_parent_and_its_cpu_counted() -> None:
    shell = subprocess.Popen(["/bin/sh", "-c", f"{sys.executable} -c '{BUSY}'; :"])
    try:
        meter = CpuMeter({"tree": lambda: descendants(shell.pid), "none": lambda: [],
                          "harness": lambda: [os.getpid()]})
        meter.start()
        for _ in range(100):  # until the grandchild has burnt its 0.4 s
            kids = descendants(shell.pid)
            if len(kids) == 2 and cpu_seconds(kids[1]) >= 0.4:
                break
            time.sleep(0.05)
        used = meter.stop()
        assert len(descendants(shell.pid)) == 2
        assert 0.3 <= used["tree"] < 5
        assert used["none"] == 0
        assert used["harness"] >= 0
    finally:
        for pid in reversed(descendants(shell.pid)):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        shell.wait()


def test_a_gone_process_counts_nothing() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert cpu_seconds(gone.pid) == 0.0
    assert descendants(gone.pid) == [gone.pid]


def test_a_jvm_thread_is_told_by_its_name() -> None:
    assert jvm_thread_part("Executor task l") == "task threads"
    assert jvm_thread_part("GC Thread#1") == jvm_thread_part("G1 Conc#0") == "garbage collector"
    assert jvm_thread_part("C2 CompilerThre") == "JIT compilers"
    assert jvm_thread_part("Thread-7") == jvm_thread_part("dag-scheduler-e") == JVM_DRIVER


def test_the_thread_meter_counts_the_cpu_of_each_thread_once() -> None:
    meter = JvmThreadMeter(lambda: [os.getpid()])  # not a JVM: every thread is "driver"
    meter.start()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    spent = meter.stop()
    assert set(spent) == set(JVM_PARTS)
    assert 0.2 <= spent[JVM_DRIVER] <= 1.0 and spent["task threads"] == 0.0
