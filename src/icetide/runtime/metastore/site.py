"""Where a home's metastore keeps its files, and the ``hive-site.xml`` it runs with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from icetide.config import Settings
from icetide.runtime.local_server import ServerFiles
from icetide.runtime.loopback import require_loopback
from icetide.runtime.paths import Below
from icetide.runtime.s3 import hadoop_properties, on_s3

STATE_FILE = "service.json"


@dataclass(frozen=True)
class MetastorePaths(ServerFiles):
    """The files of one home's metastore service."""

    FOLDER = "metastore"
    conf_dir = Below("conf")
    database = Below("db")
    #: written once the service listens
    state = Below(STATE_FILE)
    #: The port the service last listened on (kept after it stops: a service that had to
    #: take a free port takes the same one again when it can).
    last_port = Below("last-port")
    log = Below("metastore.log")
    lock = Below("start.lock")


def check_host(host: str) -> None:
    """The metastore speaks thrift without authentication: loopback only."""
    require_loopback(host, "metastore.host", "the embedded metastore",
                     "reach it from other hosts through an SSH tunnel, or run a secured "
                     "metastore and set catalog.uri")


def _property(name: str, value: str) -> str:
    return f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>"


def _database(settings: Settings, paths: MetastorePaths) -> dict[str, str]:
    """Derby under the home, or PostgreSQL (the password is not written: the service sets
    it in memory, from the environment)."""
    cfg = settings.metastore
    if cfg.database is None:
        return {"javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={paths.database};create=true",
                "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver"}
    props = {"javax.jdo.option.ConnectionURL": cfg.database,
             "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver"}
    if cfg.user:
        props["javax.jdo.option.ConnectionUserName"] = cfg.user
    return props


def hive_site(settings: Settings, paths: MetastorePaths) -> str:
    """``hive-site.xml``: its database, the lake's warehouse, short lock expiry.

    ``hive.txn.timeout``: a writer killed while it holds Iceberg's commit lock blocks the
    table's next commit until then (Hive's default is 300 s).
    """
    timeout = f"{int(settings.metastore.lock_timeout)}s"
    props = {
        **_database(settings, paths),
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": settings.warehouse,
        "hive.txn.timeout": timeout,
        **(hadoop_properties(settings) if on_s3(settings.warehouse) else {}),
    }
    lines = [_property(k, v) for k, v in props.items()]
    return '<?xml version="1.0"?>\n<configuration>\n' + "\n".join(lines) + "\n</configuration>\n"


#: The service JVM's log4j2 configuration (package data beside this module).
LOG4J2 = Path(__file__).with_name("log4j2.properties")


def write_conf(settings: Settings, paths: MetastorePaths) -> None:
    """Write ``hive-site.xml`` and the log config (private to the owner)."""
    paths.conf_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (paths.conf_dir / "hive-site.xml").write_text(hive_site(settings, paths))
    (paths.conf_dir / "log4j2.properties").write_text(LOG4J2.read_text())
