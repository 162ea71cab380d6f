"""The Spark Thrift Server (HiveServer2 protocol: JDBC, ODBC, PyHive, beeline) over the lake.

It runs inside the process's SparkSession (``HiveThriftServer2.startWithContext`` over
py4j, ~1 s), so it sees exactly the catalogs, jars and Spark conf of every other icetide
command: tables are named ``namespace.table`` in the lake catalog, the default catalog of
every client session. No Hive metastore is involved (``spark.sql.catalogImplementation``
stays ``in-memory``); Hive's own scratch, warehouse and Derby files go under
``$ICETIDE_HOME/sql-server`` instead of the working directory.

Each client connection gets its own Spark session (``newSession()``): its ``SET``s and
``USE`` stay its own, while all share the SparkContext, and therefore the cluster.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from icetide.config import Settings
from icetide.errors import ConfigError, NotReadyError
from icetide.runtime.retry import wait_until
from icetide.serving.auth import (
    authenticator_jar,
    check_exposure,
    install_authenticator,
)

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: The database JDBC URLs name. PyHive and the Hive JDBC driver run ``USE <database>`` on
#: connect, so it must exist in the lake catalog.
DEFAULT_DATABASE = "default"

Auth = Literal["none", "password"]


def pick_port(host: str, port: int) -> int:
    """``port``, or a free one for 0; refuses a port something already listens on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"the SQL server cannot listen on {host}:{port} ({exc.strerror}): stop what "
                "uses it, or choose another with --port (sql_server.port, "
                "ICETIDE_SQL_SERVER__PORT; 0: a free port)"
            ) from exc
        chosen: int = sock.getsockname()[1]
        return chosen


def hive_conf(settings: Settings, host: str, port: int, auth: Auth) -> dict[str, str]:
    """HiveServer2 settings for the server's session (pure: no JVM)."""
    work = settings.path("sql-server")
    return {
        "hive.server2.thrift.bind.host": host,
        "hive.server2.thrift.port": str(port),
        "hive.server2.transport.mode": "binary",
        "hive.server2.authentication": "CUSTOM" if auth == "password" else "NONE",
        # per-operation log files under /tmp/<user>/operation_logs: not needed, and their
        # cleanup fails loudly on some file systems
        "hive.server2.logging.operation.enabled": "false",
        "hive.exec.scratchdir": str(work / "scratch"),
        "hive.exec.local.scratchdir": str(work / "scratch-local"),
        "hive.downloaded.resources.dir": str(work / "resources"),
        "hive.metastore.warehouse.dir": str(settings.path("spark-warehouse")),
    }


def _probe(host: str, port: int) -> bool:
    """Connect once: True, or OSError when nothing listens."""
    target = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    with socket.create_connection((target, port), timeout=1.0):
        return True


def _closed(host: str, port: int) -> bool:
    try:
        return not _probe(host, port)
    except OSError:
        return True


def _wait_listening(host: str, port: int, timeout: float = 30.0) -> None:
    wait_until(lambda: _probe(host, port), timeout=timeout, ignoring=OSError,
               what=f"the SQL server on {host}:{port}", detail=lambda: "see the Spark log above")


@dataclass
class SqlServer:
    """A running HiveServer2 endpoint; stop it with :meth:`stop` or ``with``."""

    host: str
    port: int
    auth: Auth
    user: str
    catalog: str
    _server: JavaObject | None = field(repr=False, default=None)

    @property
    def jdbc_url(self) -> str:
        """``jdbc:hive2://host:port/default`` for JDBC clients (beeline, BI tools)."""
        return f"jdbc:hive2://{self.host}:{self.port}/{DEFAULT_DATABASE}"

    def stop(self) -> None:
        """Stop listening and close the client sessions (the SparkSession keeps running)."""
        if self._server is not None:
            self._server.stop()
            self._server = None
            try:  # the listening socket closes shortly after
                wait_until(lambda: _closed(self.host, self.port), timeout=10.0, interval=0.05,
                           what=f"the SQL server's socket {self.host}:{self.port} to close",
                           interruptible=False)  # a stop request is why it stops
            except NotReadyError as exc:
                log.warning("%s", exc)
            log.info("SQL server on %s:%d stopped", self.host, self.port)

    def __enter__(self) -> SqlServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def start_sql_server(spark: SparkSession, settings: Settings, host: str | None = None,
                     port: int | None = None) -> SqlServer:
    """Serve the lake of ``settings`` over HiveServer2 from ``spark`` (already running).

    ``host``/``port`` override ``sql_server.host``/``.port``. Binding anything but loopback
    needs ``ICETIDE_SQL_SERVER__PASSWORD``; with a password, clients log in as
    ``sql_server.user``.
    """
    config = settings.sql_server
    host = host or config.host
    check_exposure(config, host)
    port = pick_port(host, config.port if port is None else port)
    auth: Auth = "password" if config.password is not None else "none"
    started = time.perf_counter()
    session = spark.newSession()  # the server's settings stay out of the caller's session
    for key, value in hive_conf(settings, host, port, auth).items():
        session.conf.set(key, value)
    for sub in ("scratch", "scratch-local", "resources"):
        settings.path("sql-server", sub).mkdir(parents=True, exist_ok=True)
    jvm = session._jvm
    assert jvm is not None
    jvm.java.lang.System.setProperty(
        "derby.stream.error.file", str(settings.path("sql-server", "derby.log")))
    if config.password is not None:
        install_authenticator(session, authenticator_jar(settings), config.user, config.password)
    catalog = settings.catalog.name
    session.sql(f"CREATE NAMESPACE IF NOT EXISTS `{catalog}`.`{DEFAULT_DATABASE}`")
    # Hive keeps a per-thread SessionState whose HiveConf a second server on this thread
    # would reuse (its port and authentication included): start from none
    jvm.org.apache.hadoop.hive.ql.session.SessionState.detachSession()
    server_class = jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
    server = server_class.startWithContext(session._jsparkSession.sqlContext())
    _wait_listening(host, port)
    log.info("SQL server (HiveServer2, auth %s) on %s:%d, catalog %s, started in %.1fs",
             auth, host, port, catalog, time.perf_counter() - started)
    return SqlServer(host, port, auth, config.user, catalog, server)
