"""The metastore service process: a JVM, driven over py4j, serving one address.

Hive 2.3.9's ``HiveMetaStore.main`` listens on every interface and has no bind-host
setting, so this builds what its ``startMetaStore`` builds — the retrying HMS handler
behind a ``TSetIpAddressProcessor`` in a ``TThreadPoolServer`` — on a ``TServerSocket``
bound to one address. A new Derby database first gets the transaction tables Iceberg's
commit lock needs (``TxnDbUtil.prepDb``: ``autoCreateAll`` does not create them, and
every commit would then retry for minutes and fail).

Run it as ``python -m icetide.runtime.metastore`` (see :mod:`.service`); it writes its
state file (with the port it got) once it listens and removes it on SIGTERM. It also
stops by itself when its home is deleted, or after ``metastore.idle_timeout`` without
clients (:mod:`.watch`). The JVM dies with this process (py4j ``die_on_exit``),
``kill -9`` included.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import pyspark_jars_dir
from icetide.runtime.java import check_java
from icetide.runtime.metastore.site import MetastorePaths, check_host
from icetide.runtime.metastore.txn_tables import prepare_postgres
from icetide.runtime.metastore.watch import Watchdog, check_interval, watch
from icetide.runtime.retry import wait_until

if TYPE_CHECKING:
    #: py4j's JVM view (attribute access reaches Java packages and classes) and the
    #: handles of Java objects through it.
    from py4j.java_gateway import JavaGateway, JavaObject
    from py4j.java_gateway import JVMView as JVM

log = logging.getLogger(__name__)

#: Where the service process finds the PostgreSQL password (never in a file or argv).
PASSWORD_ENV = "ICETIDE_METASTORE__PASSWORD"


#: The service JVM compiles with C1 only and collects with one thread: Derby generates a
#: class per SQL statement, and the stock JVM's C2 spends the service's first minutes
#: recompiling them (figures: docs/benchmarks-history.md).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: Seconds the bound socket may take to serve (its thread starts it at once; the client
#: side gives up after ``metastore.start_timeout`` anyway).
SERVING_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ServiceSpec:
    """What one service process serves: its home's files, its address, its JVM heap."""

    paths: MetastorePaths
    host: str
    port: int
    heap: str = "512m"
    #: Seconds after which a lock without heartbeat is expired (``hive.txn.timeout``).
    lock_timeout: float = 60.0
    #: PostgreSQL JDBC URL of the metastore's database (``None``: Derby under the home)
    #: and its user; the password comes from :data:`PASSWORD_ENV`.
    database: str | None = None
    user: str | None = None
    #: jars beyond pyspark's (``os.pathsep``-joined): the database's JDBC driver, S3A
    extra_jars: str = ""
    #: Ports to try, in order, when ``port`` is taken (``0``: any free one); empty: only
    #: ``port`` (``metastore.port`` set explicitly).
    fallback_ports: tuple[int, ...] = ()
    #: Seconds without clients after which the service stops (``None``: never).
    idle_timeout: float | None = None

    @property
    def new(self) -> bool:
        """Whether the database still lacks the transaction tables (Derby: not created)."""
        return self.database is None and not self.paths.database.exists()


def _launch(spec: ServiceSpec, out: IO[str]) -> JavaGateway:
    """Start the JVM (py4j gateway with an auth token) and return a connected gateway."""
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    java = check_java()
    conf = spec.paths.conf_dir
    driver = f"{os.pathsep}{spec.extra_jars}" if spec.extra_jars else ""
    port, token = launch_gateway(
        classpath=f"{conf}{os.pathsep}{pyspark_jars_dir()}/*{driver}",
        javaopts=[f"-Xmx{spec.heap}", *JVM_OPTIONS,
                  f"-Dderby.stream.error.file={spec.paths.root / 'derby.log'}",
                  f"-Dlog4j2.configurationFile={conf / 'log4j2.properties'}"],
        java_path=str(java.executable), die_on_exit=True, enable_auth=True,
        redirect_stdout=out, redirect_stderr=out, cwd=str(spec.paths.root))
    return JavaGateway(gateway_parameters=GatewayParameters(port=port, auth_token=token,
                                                            auto_convert=True))


def _hive_conf(jvm: JVM) -> JavaObject:
    """hive-site.xml from the class path, plus the database password (memory only)."""
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
    password = os.environ.get(PASSWORD_ENV)
    if password:
        conf.set("javax.jdo.option.ConnectionPassword", password)
    return conf


def _bind(jvm: JVM, spec: ServiceSpec) -> tuple[JavaObject, int]:
    """A thrift server socket on ``spec.host``: ``spec.port``, else the first fallback
    port that is free (``0``: any); with the port it got."""
    failed = []
    for port in (spec.port, *spec.fallback_ports):
        try:
            socket = jvm.org.apache.thrift.transport.TServerSocket(
                jvm.java.net.InetSocketAddress(spec.host, port))
        except Exception as exc:
            failed.append(f"{port} ({exc})")
            continue
        return socket, int(socket.getServerSocket().getLocalPort())
    raise RuntimeSetupError(
        f"the metastore cannot listen on {spec.host}:{' or '.join(failed)}: another program "
        "uses the port; set metastore.port (ICETIDE_METASTORE__PORT) to a free one, or leave "
        "it unset to take a free port")


@dataclass(frozen=True)
class _Bound:
    """The thrift server (not serving yet), its port and its connection threads."""

    server: JavaObject
    port: int
    pool: JavaObject

    def activity(self) -> tuple[int, int]:
        """(connections being served now, connections accepted so far)."""
        return int(self.pool.getActiveCount()), int(self.pool.getTaskCount())


def _server(jvm: JVM, conf: JavaObject, spec: ServiceSpec) -> _Bound:
    """The thrift server of the metastore, bound to ``spec.host`` (see :func:`_bind`)."""
    hms, thrift = jvm.org.apache.hadoop.hive.metastore, jvm.org.apache.thrift
    if spec.new:
        log.info("new metastore database %s: creating the transaction tables",
                 spec.paths.database)
        hms.txn.TxnDbUtil.prepDb(conf)
    base = getattr(hms, "HiveMetaStore$HMSHandler")("new db based metaserver", conf, False)
    processor = hms.TSetIpAddressProcessor(hms.HiveMetaStore.newRetryingHMSHandler(base, conf))
    socket, port = _bind(jvm, spec)
    # thrift's own pool (4..200 threads, one per connection), made here so that the
    # watchdog can count the connections
    cc = jvm.java.util.concurrent
    pool = cc.ThreadPoolExecutor(4, 200, 60, cc.TimeUnit.SECONDS, cc.SynchronousQueue())
    args = getattr(thrift.server, "TThreadPoolServer$Args")(socket)
    args = (args.processor(processor).transportFactory(thrift.transport.TTransportFactory())
            .protocolFactory(getattr(thrift.protocol, "TBinaryProtocol$Factory")())
            .executorService(pool))
    return _Bound(thrift.server.TThreadPoolServer(args), port, pool)


def _reap_locks(jvm: JVM, conf: JavaObject, every: float, stop: threading.Event) -> None:
    """Expire the locks of writers that stopped heartbeating (``kill -9`` mid-commit).

    Hive 2.3.9 does this only in its ACID housekeeper, which runs with the compactor;
    without it a dead writer's lock blocks the table for ever. ``performTimeOuts``
    removes locks and transactions idle for longer than ``hive.txn.timeout``.
    """
    store = jvm.org.apache.hadoop.hive.metastore.txn.TxnUtils.getTxnStore(conf)
    while not stop.wait(every):
        try:
            store.performTimeOuts()
        except Exception as exc:  # the service goes on; the next round retries
            log.warning("expiring dead writers' locks failed: %s", exc)


def _write_state(spec: ServiceSpec, port: int) -> None:
    tmp = spec.paths.state.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "host": spec.host, "port": port}))
    tmp.replace(spec.paths.state)
    spec.paths.last_port.write_text(f"{port}\n")


def _clear_state(spec: ServiceSpec) -> None:
    """Remove the state file if it is still this process's (a home deleted and made again
    may have a new service of its own)."""
    try:
        if json.loads(spec.paths.state.read_text()).get("pid") != os.getpid():
            return
    except (OSError, ValueError, AttributeError):
        return
    spec.paths.state.unlink(missing_ok=True)


def serve(spec: ServiceSpec, stop: threading.Event) -> None:
    """Serve until ``stop`` is set (SIGTERM/SIGINT set it in :func:`main`)."""
    check_host(spec.host)
    if spec.database is not None:
        prepare_postgres(spec.database.removeprefix("jdbc:").split("?", 1)[0], spec.user,
                         os.environ.get(PASSWORD_ENV))
    started = time.monotonic()
    with spec.paths.log.open("a") as out:
        gateway = _launch(spec, out)
        try:
            conf = _hive_conf(gateway.jvm)
            bound = _server(gateway.jvm, conf, spec)
            threading.Thread(target=bound.server.serve, name="metastore", daemon=True).start()
            threading.Thread(target=_reap_locks, name="lock-reaper", daemon=True,
                             args=(gateway.jvm, conf, max(1.0, spec.lock_timeout / 4),
                                   stop)).start()
            wait_until(bound.server.isServing, timeout=SERVING_TIMEOUT_S, interval=0.05,
                       what=f"the metastore's thrift server on {spec.host}:{bound.port}",
                       interruptible=False)  # its own process: SIGTERM sets ``stop``
            _write_state(spec, bound.port)
            log.info("metastore listening on thrift://%s:%d (%.1fs)", spec.host, bound.port,
                     time.monotonic() - started)
            dog = Watchdog(spec.paths.root, spec.paths.state, spec.idle_timeout,
                           bound.activity)
            threading.Thread(target=watch, name="watchdog", daemon=True,
                             args=(dog, check_interval(spec.idle_timeout), stop)).start()
            stop.wait()
            bound.server.stop()
        finally:
            _clear_state(spec)
            gateway.shutdown()


def main(spec: ServiceSpec) -> None:
    """The service process: serve until SIGTERM or SIGINT."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serve(spec, stop)

