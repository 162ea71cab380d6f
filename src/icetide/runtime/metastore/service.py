"""Find, start, wait for and stop a home's metastore service (the client side).

One service per home: its state file says which process serves which address. A start
holds a file lock, so two icetide processes starting at once share one service. The
service runs detached (its own session): it outlives the ``run`` or ``demo`` that
started it, serves every later process and other engines, and stops on
``icetide catalog stop`` — or by itself when its home is deleted, or after
``metastore.idle_timeout`` without clients (:mod:`.watch`).

Its address is the one it recorded: with ``metastore.port`` left unset it takes a free
port when another program (another home's service, say) holds 9083. Every reader builds
the URI with :func:`metastore_uri`.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

from icetide.config import Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.classpath import group_jars
from icetide.runtime.local_server import Detached, Recorded, accepts, start_lock, terminate
from icetide.runtime.metastore.server import PASSWORD_ENV
from icetide.runtime.metastore.site import MetastorePaths, check_host, write_conf
from icetide.runtime.s3 import on_s3

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceState(Recorded):
    """A running service: its process and address."""

    SCHEME = "thrift"


def embedded(settings: Settings) -> bool:
    """Whether the catalog is icetide's own metastore (``hive`` with no ``uri``)."""
    return settings.catalog.type == "hive" and not settings.catalog.uri


def port_is_set(settings: Settings) -> bool:
    """Whether ``metastore.port`` was set (YAML or env): the service may not move to a free
    port then. Left unset, it is 9083 when free."""
    return "port" in settings.metastore.model_fields_set


def configured_uri(settings: Settings) -> str:
    """The address ``metastore.host``/``port`` name (where a new service tries first)."""
    return f"thrift://{settings.metastore.host}:{settings.metastore.port}"


def metastore_uri(settings: Settings) -> str:
    """The home's metastore as a thrift URI: the address its running service recorded
    (a free port when 9083 was taken), else the configured one. The one place that
    builds it: Spark's conf, pyiceberg, status, the dashboard and the printed
    instructions all read it here."""
    state = ServiceState.read(MetastorePaths.of(settings).state)
    return state.uri if state is not None else configured_uri(settings)


def running(settings: Settings) -> ServiceState | None:
    """The home's service, if its process is alive and it accepts connections."""
    state = ServiceState.read(MetastorePaths.of(settings).state)
    if state is not None and accepts(state.host, state.port):
        return state
    return None


def ensure_metastore(settings: Settings) -> ServiceState:
    """The home's service, started (detached) if it is not running; waits until it listens."""
    paths = MetastorePaths.of(settings)
    cfg = settings.metastore
    check_host(cfg.host)
    with start_lock(paths):
        state = running(settings)
        if state is not None:
            _check_address(state, settings)
            return state
        if port_is_set(settings) and accepts(cfg.host, cfg.port):
            raise RuntimeSetupError(
                f"{cfg.host}:{cfg.port} is taken by another program, not this home's "
                f"metastore ({paths.root}): set metastore.port (ICETIDE_METASTORE__PORT) to a "
                "free port, leave it unset to take a free one, or set catalog.uri to use "
                "that metastore"
            )
        return _spawn(settings, paths)


def _check_address(state: ServiceState, settings: Settings) -> None:
    cfg = settings.metastore
    if state.host != cfg.host or (port_is_set(settings) and state.port != cfg.port):
        raise RuntimeSetupError(
            f"this home's metastore runs at {state.uri}, not at {configured_uri(settings)} "
            "as metastore.host/port say: stop it (icetide catalog stop) or change the settings"
        )


def _jar_groups(settings: Settings) -> list[str]:
    """The service's jars beyond pyspark's: its database's driver, S3A for an s3 lake."""
    return ((["postgres"] if settings.metastore.database else [])
            + (["s3a"] if on_s3(settings.warehouse) else []))


def fallback_ports(settings: Settings, paths: MetastorePaths) -> tuple[int, ...]:
    """Where a new service goes when ``metastore.port`` is taken: nowhere when the port
    was set explicitly; else the port it had last time (external engines keep their
    URI), then any free port."""
    if port_is_set(settings):
        return ()
    try:
        last = int(paths.last_port.read_text().strip())
    except (OSError, ValueError):
        return (0,)
    return (0,) if last == settings.metastore.port else (last, 0)


def _command(settings: Settings, paths: MetastorePaths) -> list[str]:
    cfg = settings.metastore
    return [sys.executable, "-m", "icetide.runtime.metastore", str(paths.root), cfg.host,
            str(cfg.port), cfg.heap, str(cfg.lock_timeout), cfg.database or "", cfg.user or "",
            os.pathsep.join(map(str, group_jars(settings, _jar_groups(settings)))),
            ",".join(str(p) for p in fallback_ports(settings, paths)),
            "" if cfg.idle_timeout is None else str(cfg.idle_timeout)]


def _spawn(settings: Settings, paths: MetastorePaths) -> ServiceState:
    cfg = settings.metastore
    write_conf(settings, paths)
    paths.state.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != PASSWORD_ENV}
    if cfg.password is not None:
        env[PASSWORD_ENV] = cfg.password.get_secret_value()
    service = Detached("the metastore", paths)
    proc = service.spawn(_command(settings, paths), env=env, cwd=paths.root)
    log.info("starting the metastore at %s%s (log: %s)", configured_uri(settings),
             "" if port_is_set(settings) else " or a free port", paths.log)

    def listening() -> ServiceState | None:
        state = running(settings)
        return state if state is not None and state.pid == proc.pid else None

    return service.await_ready(listening, timeout=cfg.start_timeout, interval=0.2,
                               what=f"the metastore at {configured_uri(settings)}",
                               hint="metastore.start_timeout bounds its start; ")


def stop_metastore(settings: Settings, timeout: float = 30.0) -> ServiceState | None:
    """Stop the home's service (SIGTERM, then SIGKILL after ``timeout``); the one stopped."""
    state = running(settings)
    if state is None:
        return None
    terminate(state.pid, timeout, "metastore")
    MetastorePaths.of(settings).state.unlink(missing_ok=True)
    return state
