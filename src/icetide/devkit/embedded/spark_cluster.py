"""A Spark standalone cluster on loopback, from the pyspark wheel's own scripts.

``EmbeddedSparkCluster(root, workers=2)`` starts one master
(``$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master``) and ``workers``
workers (``...deploy.worker.Worker --cores 1 --memory 1g --work-dir <root>/worker-N``),
all on 127.0.0.1 with free ports, ``SPARK_HOME`` = the installed pyspark package. Each
executor is its own JVM (launched by its worker) with its own Python workers. Point
icetide at it with ``spark.master: <cluster.master>`` (``ICETIDE_SPARK__MASTER``).

The processes get an environment without ``PYTHONPATH``/``PYSPARK_PYTHON``, so executors
import only what the application ships (``spark.python_env``), never the launching
shell's source tree by accident. ``kill_worker(i)`` SIGKILLs a worker's whole process
group — the worker, its executor JVM and Python workers: a lost node — and
``start_worker(i)`` brings it back. Output goes to ``<root>/master.log`` and
``<root>/worker-N.log``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import TypedDict

import pyspark

from icetide.devkit.embedded.process import LOOPBACK, EmbeddedServer, free_port, stop_process
from icetide.errors import RuntimeSetupError
from icetide.runtime.java import check_java
from icetide.runtime.retry import wait_until

log = logging.getLogger(__name__)

_DEPLOY = "org.apache.spark.deploy"
#: a lost worker is declared dead after this long without heartbeats (Spark: 60 s)
WORKER_TIMEOUT_S = 10


def spark_home() -> Path:
    """The installed pyspark package: a complete SPARK_HOME (bin/, jars/, sbin/)."""
    return Path(pyspark.__file__).resolve().parent


class WorkerJson(TypedDict, total=False):
    """One worker in the master's JSON status (the fields read here)."""

    port: int
    state: str


class MasterJson(TypedDict, total=False):
    """The Spark master's JSON status (``/json/``), the fields read here."""

    workers: list[WorkerJson]


class EmbeddedSparkCluster(EmbeddedServer["EmbeddedSparkCluster"]):
    """One master and ``workers`` workers (``cores`` / ``memory`` each) on loopback."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1,
                 memory: str = "1g") -> None:
        self.root = root
        self.cores, self.memory = cores, memory
        self.port, self.webui_port = free_port(), free_port()
        self._master: subprocess.Popen[bytes] | None = None
        self._workers: list[subprocess.Popen[bytes] | None] = [None] * workers

    @property
    def master(self) -> str:
        """The master URL: ``spark://127.0.0.1:<port>``."""
        return f"spark://{LOOPBACK}:{self.port}"

    def work_dir(self, i: int) -> Path:
        """Worker ``i``'s work dir: executors run (and unpack archives) in subdirectories."""
        return self.root / f"worker-{i}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
        java = check_java()
        if java.java_home is not None:
            env["JAVA_HOME"] = str(java.java_home)
        # both sides read spark.worker.timeout: workers heartbeat every timeout / 4
        timeout = f"-Dspark.worker.timeout={WORKER_TIMEOUT_S}"
        env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK,
                    "SPARK_MASTER_OPTS": timeout, "SPARK_WORKER_OPTS": timeout,
                    "SPARK_NO_DAEMONIZE": "1"})
        return env

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        with (self.root / f"{name}.log").open("ab") as out:
            return subprocess.Popen(cmd, env=self._env(), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self, timeout: float = 120) -> EmbeddedSparkCluster:
        """Start the master and every worker; return once all workers are ALIVE."""
        self.root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        self._master = self._spawn(
            "master", f"{_DEPLOY}.master.Master", "--host", LOOPBACK, "--port", str(self.port),
            "--webui-port", str(self.webui_port))
        for i in range(len(self._workers)):
            self.start_worker(i, wait=False)
        self.wait_workers(len(self._workers), timeout)
        log.info("Spark standalone cluster %s with %d workers up in %.1fs", self.master,
                 len(self._workers), time.monotonic() - started)
        return self

    def start_worker(self, i: int, wait: bool = True, timeout: float = 120) -> None:
        """(Re)start worker ``i``; with ``wait``, until the master lists it ALIVE."""
        self.work_dir(i).mkdir(parents=True, exist_ok=True)
        port = free_port()  # a new port: the master may still list the old one as ALIVE
        self._workers[i] = self._spawn(
            f"worker-{i}", f"{_DEPLOY}.worker.Worker", "--host", LOOPBACK, "--port", str(port),
            "--webui-port", str(free_port()), "--cores", str(self.cores),
            "--memory", self.memory, "--work-dir", str(self.work_dir(i)), self.master)
        if wait:
            wait_until(lambda: any(w.get("port") == port and w.get("state") == "ALIVE"
                                   for w in self.state().get("workers", [])),
                       timeout=timeout, interval=0.3, what=f"Spark worker {i} (ALIVE)",
                       detail=lambda: f"see {self.root / f'worker-{i}.log'}")

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i`` with its executor and Python workers (a lost node)."""
        proc = self._workers[i]
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self._workers[i] = None
        log.info("killed worker %d (pid %d)", i, proc.pid)

    def state(self) -> MasterJson:
        """The master's JSON status (workers, applications), or ``{}`` while it starts."""
        url = f"http://{LOOPBACK}:{self.webui_port}/json/"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                data: MasterJson = json.load(resp)
                return data
        except OSError:
            return {}

    def alive_workers(self) -> int:
        """How many workers the master lists as ALIVE."""
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def wait_workers(self, count: int, timeout: float = 120) -> None:
        """Until the master lists ``count`` ALIVE workers."""

        def alive() -> bool:
            if self._master is None or self._master.poll() is not None:
                raise RuntimeSetupError(
                    f"the Spark master exited: see {self.root / 'master.log'}")
            return self.alive_workers() >= count

        wait_until(alive, timeout=timeout, interval=0.3, what=f"{count} Spark workers (ALIVE)",
                   detail=lambda: f"see the worker-N.log files in {self.root}")

    def stop(self) -> None:
        """Stop the workers (their executors with them), then the master."""
        for i, proc in enumerate(self._workers):
            if proc is not None:
                stop_process(proc, f"Spark worker {i}", 20)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # executors left behind, if any
                self._workers[i] = None
        stop_process(self._master, "Spark master", 20)
        self._master = None

