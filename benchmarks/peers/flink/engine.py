"""The Flink peer as a process: PyFlink's venv, the job's jars, start/stop, its table.

PyFlink lives in a venv of its own (``$XDG_CACHE_HOME/icetide/flink-venv`` unless
``--flink-python`` names another interpreter): it pins py4j 0.10.9.7 and Apache Beam,
icetide pins py4j 0.10.9.9, so the two cannot share one environment, and the job runs in
its own process anyway (``job.py``). ``--setup`` makes that venv with pip.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.peers.flink.sql import CATALOG, DATABASE, TABLE, JobOptions, JobSpec, job_spec
from benchmarks.peers.flink.versions import CDC_GROUP, DEFAULT, HADOOP_GROUP, JAR_GROUP, Pairing
from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.classpath import resolve_into_cache
from icetide.runtime.hadoop_tables import HadoopDirCatalog
from icetide.runtime.jars import default_cache

if TYPE_CHECKING:
    from pyiceberg.table import Table

log = logging.getLogger(__name__)

JOB = Path(__file__).with_name("job.py")
STOP_TIMEOUT_S = 30.0


def default_venv() -> Path:
    """``~/.cache/icetide/flink-venv`` (beside the jar cache)."""
    return Path(default_cache().parent, "flink-venv")


def setup_command(venv: Path, pairing: Pairing = DEFAULT) -> str:
    return (f"{sys.executable} -m venv {venv} && {venv}/bin/pip install "
            f"{pairing.pip_requirement}")


def flink_python(explicit: Path | None, pairing: Pairing = DEFAULT) -> Path:
    """The interpreter that has PyFlink ``pairing.flink``; an error naming the install
    command when there is none."""
    python = explicit or default_venv() / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('apache-flink'))"],
        capture_output=True, text=True, check=False) if python.exists() else None
    if probe is None or probe.returncode != 0:
        raise RuntimeSetupError(
            f"PyFlink is not installed for {python}: run `python -m benchmarks.peers.flink "
            f"--setup` (it runs `{setup_command(default_venv(), pairing)}`), or pass "
            "--flink-python with an interpreter that has apache-flink "
            f"{pairing.flink}")
    if probe.stdout.strip() != pairing.flink:
        raise RuntimeSetupError(
            f"{python} has apache-flink {probe.stdout.strip()}, the peer's jars are for "
            f"{pairing.flink}: `{python.parent}/pip install {pairing.pip_requirement}`")
    return python


def setup_venv(pairing: Pairing = DEFAULT) -> Path:
    """Create the default PyFlink venv (pip from PyPI); its interpreter."""
    venv = default_venv()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", pairing.pip_requirement], check=True)
    return venv / "bin" / "python"


@dataclass(frozen=True)
class PeerJars:
    """The jobs' jar files: connectors (``pipeline.jars``), the Hadoop client, and the
    CDC connector (the CDC job's ``pipeline.jars`` only)."""

    connectors: list[str]
    hadoop: list[str]
    cdc: list[str]


def peer_jars(settings: Settings, pairing: Pairing = DEFAULT) -> PeerJars:
    """The bench-only list resolved into icetide's jar cache on first use (its own
    manifest; ``make install`` never fetches it)."""
    resolved = resolve_into_cache(settings, pairing.jar_spec())
    return PeerJars(*([str(j.path) for j in resolved[g]]
                      for g in (JAR_GROUP, HADOOP_GROUP, CDC_GROUP)))


def log_path(workdir: Path, ident: tuple[str, str]) -> Path:
    """A job's output, named by the table it writes (the jobs share ``workdir``)."""
    return workdir / f"flink-{'.'.join(ident)}.log"


def flink_log_dir(workdir: Path, ident: tuple[str, str]) -> Path:
    """Flink's own log of a job (``$FLINK_LOG_DIR``; by default PyFlink writes every job's
    to one file in its package, each JVM starting it afresh)."""
    return workdir / f"flink-log-{'.'.join(ident)}"


@dataclass
class FlinkJob:
    """One running peer job (a PyFlink process in a session of its own) and the table
    (``database``, ``table``) it writes in its warehouse."""

    proc: subprocess.Popen[bytes]
    warehouse: Path
    ident: tuple[str, str] = (DATABASE, TABLE)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"the Flink job exited with {self.proc.returncode}; the end of "
                             f"its log:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the job's output, and the last warnings and errors of Flink's
        own log (its temporary directory goes with the run)."""
        workdir = self.warehouse.parent
        try:
            text = log_path(workdir, self.ident).read_text(errors="replace")
        except OSError:
            text = "(no output)"
        flink = [line for f in sorted(flink_log_dir(workdir, self.ident).glob("*.log"))
                 for line in f.read_text(errors="replace").splitlines()
                 if " WARN " in line or " ERROR " in line]
        return "\n".join([*text.splitlines()[-lines:], "Flink's warnings and errors:",
                          *flink[-lines:]])

    def stop(self) -> None:
        """Stop the job's process group (PyFlink's Python and its JVM)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def table(self) -> Table | None:
        """The job's table at its current version; None before it exists."""
        try:
            table: Table = HadoopDirCatalog(CATALOG, str(self.warehouse)).load_table(
                self.ident)
        except Exception:  # not created yet, or a metadata file being written
            return None
        return table

    def committed_rows(self) -> int:
        """``total-records`` of the current snapshot (0 before the first commit)."""
        table = self.table()
        snap = table.current_snapshot() if table is not None else None
        if snap is None or snap.summary is None:
            return 0
        return int(snap.summary.additional_properties.get("total-records", 0))

    def wait_rows(self, rows: int, timeout_s: float) -> float:
        """Block until ``rows`` are committed; the monotonic time it was seen."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check()
            if self.committed_rows() >= rows:
                return time.monotonic()
            time.sleep(0.2)
        raise SystemExit(f"the Flink peer committed {self.committed_rows():,} of {rows:,} "
                         f"rows in {timeout_s:.0f}s; the end of its log:\n{self.log_tail()}")


def start_job(python: Path, options: JobOptions, jars: PeerJars, workdir: Path) -> FlinkJob:
    """Seed 001's ODS job (:mod:`.sql`) under PyFlink's interpreter."""
    return start_spec(python, job_spec(options, jars.connectors), jars, workdir,
                      (DATABASE, TABLE))


def start_spec(python: Path, spec: JobSpec, jars: PeerJars, workdir: Path,
               ident: tuple[str, str]) -> FlinkJob:
    """Write ``spec`` and start ``job.py`` on it; the job writes ``ident`` in the
    warehouse ``workdir/warehouse``."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"job-{'.'.join(ident)}.json"
    path.write_text(json.dumps(spec, indent=2))
    path.chmod(0o600)  # it holds a database password
    log_file = open(log_path(workdir, ident), "ab")  # noqa: SIM115 - closed by the child's exit
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FLINK_HOME")}
    env["HADOOP_CLASSPATH"] = os.pathsep.join(jars.hadoop)
    logs = flink_log_dir(workdir, ident)
    logs.mkdir(exist_ok=True)
    env["FLINK_LOG_DIR"] = str(logs)
    proc = subprocess.Popen([str(python), str(JOB), str(path)], stdout=log_file,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    log_file.close()
    return FlinkJob(proc, workdir / "warehouse", ident)
