"""A private PostgreSQL server (Debian ``postgresql``) for tests and a shared JDBC catalog.

``initdb`` refuses to run as root, so under root the server runs as the unprivileged
``postgres`` OS user (created by the Debian package) through ``runuser``. The data directory
is private, the server listens on a free loopback port with trust authentication and its
Unix socket lives next to the data directory.

    with EmbeddedPostgres() as pg:
        pg.jdbc_url   # jdbc:postgresql://127.0.0.1:<port>/icetide
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psycopg2

from icetide.devkit.embedded.process import EmbeddedServer
from icetide.errors import RuntimeSetupError
from icetide.runtime.local_server import LocalServer, free_port
from icetide.runtime.paths import Below

log = logging.getLogger(__name__)

INSTALL_HINT = "apt-get install postgresql"
BIN_GLOB = "/usr/lib/postgresql/*/bin"


def find_bin_dir(pattern: str = BIN_GLOB) -> Path:
    """The ``bin`` directory of the newest installed PostgreSQL major version."""
    candidates = [p for p in Path("/").glob(pattern.lstrip("/")) if (p / "initdb").is_file()]
    if not candidates:
        raise RuntimeSetupError(f"no PostgreSQL server binaries under {pattern}: {INSTALL_HINT}")
    return max(candidates, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)


def _run_as_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise RuntimeSetupError(
            f"running as root but there is no 'postgres' OS user to run the server: {INSTALL_HINT}"
        ) from exc
    return "postgres"


class EmbeddedPostgres(LocalServer, EmbeddedServer["EmbeddedPostgres"]):
    """A PostgreSQL server process with a private data directory. Use as a context manager.

    ``base_dir`` keeps the data (reused if it already holds a cluster); by default a fresh
    temporary directory is used and removed on stop. ``durable=False`` turns off fsync for
    fast tests.
    """

    NAME = "PostgreSQL"

    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        user: str = "icetide",
        dbname: str = "icetide",
        durable: bool = True,
        start_timeout: float = 30.0,
    ) -> None:
        self.bin_dir = find_bin_dir()
        self._owns_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="icetide-pg-")).resolve()
        self.port = port or free_port()
        self.user = user
        self.dbname = dbname
        self.durable = durable
        self.start_timeout = start_timeout
        self.os_user = _run_as_user()
        self._proc: subprocess.Popen[bytes] | None = None

    data_dir = Below("data", root="base_dir")
    log_path = Below("postgres.log", root="base_dir")

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.dbname}"

    @property
    def sqlalchemy_url(self) -> str:
        return f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/{self.dbname}"

    def dsn(self, dbname: str | None = None) -> str:
        """A libpq connection string for psycopg2."""
        return (
            f"host={self.host} port={self.port} user={self.user} dbname={dbname or self.dbname}"
        )

    def _command(self, *args: str) -> list[str]:
        if self.os_user is None:
            return list(args)
        return ["runuser", "-u", self.os_user, "--", *args]

    def _prepare_dirs(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if self.os_user is not None:
            for path in (self.base_dir, *self.base_dir.rglob("*")):
                shutil.chown(path, user=self.os_user, group=None)
            probe = subprocess.run(self._command("test", "-w", str(self.base_dir)), check=False)
            if probe.returncode != 0:
                raise RuntimeSetupError(
                    f"{self.base_dir} is not reachable by the OS user {self.os_user!r} that runs "
                    "PostgreSQL: use a base_dir under /tmp or /var/tmp"
                )

    def _initdb(self) -> None:
        if (self.data_dir / "PG_VERSION").is_file():
            log.debug("reusing PostgreSQL cluster in %s", self.data_dir)
            return
        cmd = self._command(
            str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", self.user,
            "--auth=trust", "-E", "UTF8", "--locale=C", *([] if self.durable else ["--no-sync"]),
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeSetupError(
                f"initdb failed in {self.data_dir} (exit {proc.returncode}): "
                f"{proc.stderr.strip()[-500:]}; check {INSTALL_HINT} and disk space"
            )

    def _server_args(self) -> list[str]:
        args = [
            str(self.bin_dir / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
            "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.base_dir}",
            "-c", "max_connections=50",
        ]
        if not self.durable:
            args += ["-c", "fsync=off", "-c", "synchronous_commit=off",
                     "-c", "full_page_writes=off"]
        return args

    def start(self) -> EmbeddedPostgres:
        """initdb (first time), start the server, wait until it accepts connections."""
        if self._proc is not None:
            return self
        self._prepare_dirs()
        self._initdb()
        self.spawn(self._command(*self._server_args()))
        self.await_ready(self._accepts, timeout=self.start_timeout,
                         ignoring=psycopg2.OperationalError,
                         what=f"PostgreSQL on {self.host}:{self.port}")
        self._ensure_database()
        log.info("PostgreSQL %s listening on %s:%d", self.bin_dir.parent.name, self.host, self.port)
        return self

    def _accepts(self) -> bool:
        psycopg2.connect(self.dsn("postgres"), connect_timeout=2).close()
        return True

    def _ensure_database(self) -> None:
        conn = psycopg2.connect(self.dsn("postgres"))
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.dbname,))
                if cur.fetchone() is None:
                    cur.execute(f'CREATE DATABASE "{self.dbname}"')
        finally:
            conn.close()

    def stop(self, timeout: float | None = None) -> None:
        """Fast shutdown (SIGINT to the postmaster, its process group killed after
        ``timeout``); removes a temporary data directory."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            self._signal_postmaster(proc)
            try:
                proc.wait(timeout=self.STOP_TIMEOUT_S if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _signal_postmaster(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError, IndexError):
            proc.send_signal(signal.SIGINT)

