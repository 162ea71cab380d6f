"""Trino as the adapters see it (``icetide trino``): the local server of this home, where
a configured one is, the catalog file for an existing Trino, the install."""

from __future__ import annotations

from dataclasses import dataclass

from icetide.config import Settings
from icetide.errors import ConfigError
from icetide.runtime.trino import dist
from icetide.runtime.trino.java import install_java
from icetide.runtime.trino.server import ensure_trino, running, stop_trino
from icetide.runtime.trino.site import TrinoPaths, catalog_properties, render


@dataclass(frozen=True)
class TrinoService:
    """Where Trino is: ``trino.uri`` (configured), or the local server and its process."""

    uri: str | None
    catalog: str
    local: bool
    running: bool
    version: str
    pid: int | None = None
    log: str | None = None
    server: str | None = None


def describe_trino(settings: Settings) -> TrinoService:
    """The configured Trino, or whether this home's local one runs."""
    cfg = settings.trino
    if cfg.uri:
        return TrinoService(cfg.uri, cfg.catalog, local=False, running=True, version="")
    state = running(settings)
    home = dist.installed(settings)
    return TrinoService(state.uri if state else f"http://{cfg.host}:{cfg.port}", cfg.catalog,
                        local=True, running=state is not None, version=dist.VERSION,
                        pid=state.pid if state else None, log=str(TrinoPaths.of(settings).log),
                        server=str(home) if home else None)


def _need_local(settings: Settings, verb: str) -> None:
    if settings.trino.uri:
        raise ConfigError(f"trino.uri is set ({settings.trino.uri}): there is no local Trino "
                          f"to {verb}; unset ICETIDE_TRINO__URI / trino.uri to use one")


def start_trino(settings: Settings) -> TrinoService:
    """Start this home's Trino (installing it first if the cache lacks it) unless it runs."""
    _need_local(settings, "start")
    ensure_trino(settings)
    return describe_trino(settings)


def stop_local_trino(settings: Settings) -> TrinoService | None:
    """Stop this home's Trino; ``None`` when it was not running."""
    _need_local(settings, "stop")
    before = describe_trino(settings)
    return before if stop_trino(settings) is not None else None


def install_trino(settings: Settings) -> TrinoService:
    """Download and unpack the server, and a Java for it, unless the cache has them."""
    install_java(settings)
    dist.install(settings)
    return describe_trino(settings)


def catalog_file(settings: Settings, *, read_only: bool = True) -> str:
    """``etc/catalog/<trino.catalog>.properties`` for an existing Trino on this machine."""
    props = catalog_properties(settings, read_only=read_only)
    note = f"etc/catalog/{settings.trino.catalog}.properties: this lake for Trino"
    if "local.location" in props:
        note += "\n(the tables' files are local paths: Trino must run on this machine)"
    return render(props, note)
