"""The files of the local Trino: its catalog file for this lake and the server's ``etc``.

The catalog file is the one a user copies into an existing Trino (``icetide trino
catalog`` prints it): the Iceberg connector on the lake's catalog service, and the file
system the warehouse is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from icetide.config import Settings
from icetide.errors import ConfigError
from icetide.runtime.local_server import ServerFiles
from icetide.runtime.loopback import require_loopback
from icetide.runtime.metastore.service import embedded, metastore_uri
from icetide.runtime.paths import Below
from icetide.runtime.s3 import uses_s3


@dataclass(frozen=True)
class TrinoPaths(ServerFiles):
    """Where a home's local Trino keeps its configuration, data, state and log."""

    FOLDER = "trino"
    etc = Below("etc")
    data = Below("data")
    state = Below("trino.json")
    log = Below("trino.log")
    lock = Below(".start.lock")


def check_host(host: str) -> None:
    """The local Trino has no authentication: loopback only."""
    require_loopback(host, "trino.host", "the local Trino",
                     "for other hosts run a secured Trino with the catalog file of "
                     "`icetide trino catalog` and set trino.uri")


def _catalog_service(settings: Settings) -> dict[str, str]:
    cat = settings.catalog
    if cat.type == "hive":
        uri = metastore_uri(settings) if embedded(settings) else str(cat.uri)
        return {"iceberg.catalog.type": "hive_metastore", "hive.metastore.uri": uri}
    if cat.type == "rest":
        return {"iceberg.catalog.type": "rest", "iceberg.rest-catalog.uri": str(cat.uri)}
    raise ConfigError(
        f"catalog.type {cat.type!r} has no Trino catalog here: Trino reads icetide's lake "
        "through a Hive Metastore (the default; `icetide catalog migrate` registers a "
        "hadoop lake into it) or a REST catalog")


def _file_system(settings: Settings) -> dict[str, str]:
    if uses_s3(settings):  # credentials: the AWS chain of the Trino server's environment
        s3 = settings.s3
        props = {"fs.native-s3.enabled": "true", "s3.region": s3.region,
                 "s3.path-style-access": str(s3.path_style_access).lower()}
        return {**props, "s3.endpoint": s3.endpoint} if s3.endpoint else props
    scheme = urlsplit(settings.warehouse).scheme
    if scheme not in ("", "file"):
        raise ConfigError(f"the warehouse {settings.warehouse!r} is on {scheme}:, which the "
                          "local Trino is not set up for: write the catalog file by hand")
    # Table files are absolute file: paths (file:/home/…/warehouse/db.db/t/…); Trino's
    # local file system resolves a location's path under local.location, so the root is /.
    return {"fs.native-local.enabled": "true", "local.location": "/"}


def catalog_properties(settings: Settings, *, read_only: bool = True) -> dict[str, str]:
    """The Trino catalog of this lake: ``etc/catalog/<trino.catalog>.properties``.

    ``read_only``: Trino may not write (icetide's flows are the lake's writers; their
    exactly-once markers live in the snapshots they commit)."""
    props = {"connector.name": "iceberg", **_catalog_service(settings), **_file_system(settings)}
    if read_only:
        props["iceberg.security"] = "read_only"
    return props


def render(props: dict[str, str], comment: str = "") -> str:
    """A Java properties file."""
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    return head + "".join(f"{k}={v}\n" for k, v in props.items())


def jvm_config(settings: Settings) -> str:
    """``etc/jvm.config``: Trino's recommended flags with a modest heap."""
    flags = [
        "-server", f"-Xmx{settings.trino.heap}", "-XX:+UseG1GC",
        "-XX:+ExplicitGCInvokesConcurrent", "-XX:+ExitOnOutOfMemoryError",
        "-XX:-OmitStackTraceInFastThrow", "-XX:ReservedCodeCacheSize=256M",
        "-XX:PerMethodRecompilationCutoff=10000", "-XX:PerBytecodeRecompilationCutoff=10000",
        "-Djdk.attach.allowAttachSelf=true", "-Djdk.nio.maxCachedBufferSize=2000000",
        "-Dfile.encoding=UTF-8", "-XX:+EnableDynamicAgentLoading",
        "--enable-native-access=ALL-UNNAMED",
    ]
    return "\n".join(flags) + "\n"


def server_properties(settings: Settings) -> tuple[dict[str, str], dict[str, str]]:
    """``etc/node.properties`` and ``etc/config.properties``: one node, on loopback."""
    cfg = settings.trino
    node = {"node.environment": "icetide", "node.id": "icetide-local",
            "node.internal-address": cfg.host, "node.bind-ip": cfg.host}
    config = {"coordinator": "true", "node-scheduler.include-coordinator": "true",
              "http-server.http.port": str(cfg.port),
              "discovery.uri": f"http://{cfg.host}:{cfg.port}"}
    return node, config


def write_etc(settings: Settings, paths: TrinoPaths) -> None:
    """Write the server's ``etc`` (replacing what an earlier start wrote)."""
    catalogs = paths.etc / "catalog"
    catalogs.mkdir(parents=True, exist_ok=True)
    node, config = server_properties(settings)
    (paths.etc / "node.properties").write_text(render(node))
    (paths.etc / "config.properties").write_text(render(config))
    (paths.etc / "jvm.config").write_text(jvm_config(settings))
    (catalogs / f"{settings.trino.catalog}.properties").write_text(render(
        catalog_properties(settings), "written by icetide trino start"))
