"""An embedded MariaDB server for the demo and the tests.

``EmbeddedMariaDB(data_dir)`` runs Debian's ``mariadbd`` under a private directory::

    <data_dir>/my.cnf            generated defaults file (the only one read)
    <data_dir>/data/             datadir, created by mariadb-install-db on first start
    <data_dir>/data/binlog.*     the binary log (ROW, FULL image, FULL metadata)
    <data_dir>/mariadbd.err      the server's error log
    <data_dir>/tmp/              its temporary files (tmpdir): private like the data, and
                                 not shared with other servers (bootstraps side by side
                                 in /tmp removed each other's temporary tables)
    <data_dir>/credentials.json  generated passwords of the two users (mode 0600)

The server listens on 127.0.0.1 only (a free port unless one is given) and on a Unix
socket, both in the owner-only ``data_dir``. ``root@localhost`` has no password and is
reachable over that socket only (``skip-name-resolve`` makes ``localhost`` mean the
socket); every other passwordless account (``mariadb-install-db`` makes ``root`` on
127.0.0.1 and ::1) is dropped at start. ``root`` is used once to create:

* ``icetide_cdc`` — REPLICATION SLAVE, BINLOG MONITOR, RELOAD, SELECT: what the CDC
  source needs (binlog dump, ``SHOW BINARY LOGS``, ``FLUSH TABLES WITH READ LOCK``);
* ``icetide_app`` — all privileges: the application / test writer.

Restarting on an existing directory reuses the data, the users and the passwords.
When running as root (CI), the server runs with ``user=root``.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict

import pymysql
from pymysql.cursors import Cursor

from icetide.devkit.embedded.process import EmbeddedServer
from icetide.errors import RuntimeSetupError
from icetide.runtime.local_server import LocalServer, free_port
from icetide.runtime.paths import Below

log = logging.getLogger(__name__)

CDC_USER = "icetide_cdc"
APP_USER = "icetide_app"
CDC_GRANTS = "REPLICATION SLAVE, BINLOG MONITOR, RELOAD, SELECT"
_SOCKET_MAX = 100  # sun_path is 108 bytes on Linux
_INSTALL_HINT = "install it with `apt-get install mariadb-server` (Debian package)"

Role = Literal["cdc", "app"]


class ConnectArgs(TypedDict, total=False):
    """Keyword arguments of ``pymysql.connect`` for the embedded server."""

    host: str
    port: int
    user: str
    password: str
    charset: str
    autocommit: bool
    ssl_disabled: bool
    database: str


@dataclass(frozen=True)
class MariaDBInfo:
    """How to reach a running embedded server."""

    host: str
    port: int
    socket: str
    server_id: int
    cdc_user: str
    cdc_password: str = field(repr=False)
    app_user: str
    app_password: str = field(repr=False)

    def connect_args(self, role: Role = "app", database: str | None = None) -> ConnectArgs:
        """Keyword arguments for ``pymysql.connect`` (TCP on loopback)."""
        user, password = (
            (self.cdc_user, self.cdc_password) if role == "cdc"
            else (self.app_user, self.app_password)
        )
        # the embedded server has no TLS; pymysql's "preferred" TLS would only cost ~0.2 s
        # per connection (loading the system CA store) for nothing
        args: ConnectArgs = {
            "host": self.host, "port": self.port, "user": user, "password": password,
            "charset": "utf8mb4", "autocommit": True, "ssl_disabled": True,
        }
        if database:
            args["database"] = database
        return args

    def connect(
        self, role: Role = "app", database: str | None = None,
    ) -> pymysql.Connection[Cursor]:
        """A new autocommit connection as the CDC or the application user."""
        return pymysql.connect(**self.connect_args(role, database))


def _binary(name: str, fallback: str) -> str:
    found = shutil.which(name) or (fallback if Path(fallback).exists() else None)
    if not found:
        raise RuntimeSetupError(f"MariaDB program {name!r} not found; {_INSTALL_HINT}")
    return found


class EmbeddedMariaDB(LocalServer, EmbeddedServer[MariaDBInfo]):
    """A private ``mariadbd`` process; use as a context manager or call start/stop."""

    NAME = "mariadbd"

    def __init__(self, data_dir: str | Path, port: int | None = None, server_id: int = 1) -> None:
        self.root = Path(data_dir).resolve()
        self._port_chosen = port is None
        self.port = port or free_port()
        self.server_id = server_id
        self._proc: subprocess.Popen[bytes] | None = None
        self._info: MariaDBInfo | None = None
        self._socket = self._socket_path()

    datadir = Below("data")
    #: its error log (``log_error``), where its output goes too
    log_path = Below("mariadbd.err")
    #: its temporary files (``tmpdir``), in the owner-only root instead of /tmp
    tmpdir = Below("tmp")

    @property
    def info(self) -> MariaDBInfo:
        """Connection info; raises when the server is not running."""
        if self._info is None:
            raise RuntimeSetupError(
                f"embedded MariaDB in {self.root} is not running: call start() first"
            )
        return self._info

    def _socket_path(self) -> Path:
        path = self.root / "mariadb.sock"
        if len(str(path)) <= _SOCKET_MAX:
            return path
        return Path(tempfile.mkdtemp(prefix="icetide-mdb-")) / "mariadb.sock"

    def _defaults(self) -> str:
        lines = [
            "[mariadbd]",
            f"datadir={self.datadir}",
            f"socket={self._socket}",
            f"pid-file={self.root / 'mariadbd.pid'}",
            f"port={self.port}",
            "bind-address=127.0.0.1",
            "skip-name-resolve",
            f"log_error={self.log_path}",
            f"tmpdir={self.tmpdir}",
            f"log_bin={self.datadir / 'binlog'}",
            "binlog_format=ROW",
            "binlog_row_image=FULL",
            "binlog_row_metadata=FULL",
            f"server_id={self.server_id}",
            "character-set-server=utf8mb4",
            "collation-server=utf8mb4_general_ci",
            "innodb_buffer_pool_size=64M",
            "innodb_log_file_size=32M",
            "innodb_flush_log_at_trx_commit=2",
            "sync_binlog=0",
            "max_connections=200",
        ]
        if os.geteuid() == 0:
            lines.append("user=root")
        return "\n".join(lines) + "\n"

    def _install(self, cnf: Path) -> None:
        cmd = [
            _binary("mariadb-install-db", "/usr/bin/mariadb-install-db"),
            f"--defaults-file={cnf}", "--skip-test-db",
            "--auth-root-authentication-method=normal",
        ]
        if os.geteuid() == 0:
            cmd.append("--user=root")
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(self.datadir, ignore_errors=True)
            raise RuntimeSetupError(
                f"mariadb-install-db failed for {self.datadir} (exit {done.returncode}): "
                f"{self.tail(15)}{done.stdout[-800:]}; fix the cause and retry"
            )

    def _credentials(self) -> dict[str, str]:
        path = self.root / "credentials.json"
        if path.exists():
            data: dict[str, str] = json.loads(path.read_text())
            return data
        creds = {"cdc": secrets.token_hex(12), "app": secrets.token_hex(12)}
        # owner-only from the first byte: never world-readable, not even between write and chmod
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(creds))
        return creds

    def start(self, timeout: float = 60.0) -> MariaDBInfo:
        """Install (first time), start, wait until ready and create the users."""
        if self._proc is not None and self._proc.poll() is None:
            return self.info
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)  # data, socket and credentials: the owner's only
        self.tmpdir.mkdir(exist_ok=True)
        cnf = self.root / "my.cnf"
        cnf.write_text(self._defaults())
        if not (self.datadir / "mysql").is_dir():
            self._install(cnf)
        started = time.monotonic()
        for attempt in range(3):
            try:
                self._launch(cnf, timeout)
                break
            except RuntimeSetupError as exc:
                busy = "Address already in use" in str(exc)
                if not (busy and self._port_chosen) or attempt == 2:
                    raise
                self.port = free_port()  # another process took the free port meanwhile
                cnf.write_text(self._defaults())
        creds = self._credentials()
        self._create_users(creds)
        self._info = MariaDBInfo(
            host="127.0.0.1", port=self.port, socket=str(self._socket), server_id=self.server_id,
            cdc_user=CDC_USER, cdc_password=creds["cdc"],
            app_user=APP_USER, app_password=creds["app"],
        )
        log.info("embedded MariaDB ready on 127.0.0.1:%d in %.2fs (data %s)",
                 self.port, time.monotonic() - started, self.root)
        return self._info

    def _launch(self, cnf: Path, timeout: float) -> None:
        self.spawn([_binary("mariadbd", "/usr/sbin/mariadbd"), f"--defaults-file={cnf}"])
        self.await_ready(self._answers, timeout=timeout,
                         what=f"mariadbd on {self._socket}", interval=0.05,
                         ignoring=(pymysql.err.OperationalError, OSError),
                         hint=f"is port {self.port} free? is {self.root} writable? ")

    def _root_connect(self) -> pymysql.Connection[Cursor]:
        return pymysql.connect(unix_socket=str(self._socket), user="root", autocommit=True,
                               connect_timeout=2)

    def _answers(self) -> bool:
        self._root_connect().close()
        return True

    def _create_users(self, creds: dict[str, str]) -> None:
        conn = self._root_connect()
        try:
            with conn.cursor() as cur:
                _close_passwordless_accounts(cur)
                for user, role, grants in (
                    (CDC_USER, "cdc", CDC_GRANTS), (APP_USER, "app", "ALL PRIVILEGES"),
                ):
                    cur.execute(f"CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' "
                                "IDENTIFIED BY %s", (creds[role],))
                    cur.execute(f"ALTER USER '{user}'@'127.0.0.1' IDENTIFIED BY %s",
                                (creds[role],))
                    cur.execute(f"GRANT {grants} ON *.* TO '{user}'@'127.0.0.1'")
        finally:
            conn.close()

    def stop(self, timeout: float | None = None) -> None:
        """Clean shutdown (SIGTERM, then SIGKILL after ``timeout``); idempotent."""
        self._info = None
        super().stop(timeout)

    def kill(self) -> None:
        """Crash the server (SIGKILL): for recovery tests."""
        proc, self._proc, self._info = self._proc, None, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()



def _close_passwordless_accounts(cur: pymysql.cursors.Cursor) -> None:
    """Drop every account that logs in without a password except ``root@localhost``.

    ``mariadb-install-db`` creates ``root`` for 127.0.0.1 and ::1 with an empty password.
    ``localhost`` matches the Unix socket only (the server runs with skip-name-resolve), and
    the socket lives in the owner-only data folder, so no one else can log in passwordless.
    """
    cur.execute("SELECT user, host FROM mysql.global_priv "
                "WHERE COALESCE(JSON_VALUE(priv, '$.authentication_string'), '') = '' "
                "AND COALESCE(JSON_VALUE(priv, '$.plugin'), 'mysql_native_password') "
                "IN ('mysql_native_password', 'mysql_old_password') "
                "AND NOT (user = 'root' AND host = 'localhost')")
    for user, host in cur.fetchall():
        cur.execute("DROP USER %s@%s", (user, host))
        log.info("embedded MariaDB: dropped passwordless account %r@%r", user, host)
