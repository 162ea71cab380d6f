"""Where the demo keeps its lake: the home's directory (default) or an embedded
S3-compatible store (``icetide demo --storage s3``), as the seeds keep theirs on S3.

The S3 lake stays queryable after the demo: it writes ``$ICETIDE_HOME/s3-lake/icetide.yaml``
(``s3.embedded: true``); a command given that config (``--config`` or ``ICETIDE_CONFIG``)
starts the store again, detached, and reads its endpoint and credentials from its folder
(:func:`embedded_store`); ``icetide catalog stop`` with it stops the store too."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import yaml

from icetide.config import Settings
from icetide.devkit.embedded.process import port_in_use
from icetide.devkit.embedded.seaweed import EmbeddedS3, S3Info

log = logging.getLogger(__name__)

Storage = Literal["local", "s3"]
#: the S3 demo's own home under the configured one: its metastore, MariaDB and store
S3_HOME = "s3-lake"
BUCKET = "lake"
#: the S3 lake's config file, under its home
LAKE_CONFIG = "icetide.yaml"


def demo_home(settings: Settings, storage: Storage) -> Settings:
    """The S3 demo is a lake of its own (its tables live in the store, not in the home)."""
    if storage == "local":
        return settings
    return settings.model_copy(update={"home": settings.home / S3_HOME})


def _stable_ports(store: EmbeddedS3) -> None:
    """The same ports on every run while free: the detached metastore of an earlier run
    keeps the endpoint it was started with."""
    saved = store.root / "ports.json"
    if saved.is_file():
        ports = json.loads(saved.read_text())
        if not any(port_in_use(p) for p in ports.values()):
            store.ports = ports
    store.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    saved.write_text(json.dumps(store.ports))


@contextlib.contextmanager
def lake_storage(settings: Settings, storage: Storage) -> Iterator[Settings]:
    """``settings`` as they are (local), or for a lake on a store started for the block."""
    if storage == "local":
        yield settings
        return
    with s3_lake(settings) as on_s3:
        yield on_s3


@contextlib.contextmanager
def s3_lake(settings: Settings) -> Iterator[Settings]:
    """Start the store under the home (or use its detached one: it then runs on), put its
    credentials in this process's environment (where every S3 client of icetide reads
    them) and yield settings for a lake on it; write the lake's config file
    (:func:`write_lake_config`), which points later commands at it."""
    store = EmbeddedS3(settings.path("s3"), bucket=BUCKET)
    with contextlib.ExitStack() as stack:
        info = store.running()
        if info is None:
            _stable_ports(store)
            info = stack.enter_context(store)
        with _environment(info.env()):
            lake = on_store(settings, info)
            write_lake_config(lake)
            yield lake


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def on_store(settings: Settings, info: S3Info) -> Settings:
    """``settings`` for the lake on the store ``info`` describes."""
    return settings.model_copy(update={
        "catalog": settings.catalog.model_copy(update={"warehouse": f"s3://{BUCKET}/warehouse"}),
        "s3": settings.s3.model_copy(update={"endpoint": info.endpoint,
                                             "path_style_access": True, "embedded": True})})


def lake_config_path(settings: Settings) -> Path:
    """The config file of the S3 demo's lake: ``$ICETIDE_HOME/s3-lake/icetide.yaml``."""
    return (settings.home / LAKE_CONFIG).resolve()


def write_lake_config(settings: Settings) -> Path:
    """Write the S3 lake's config file: its home, catalog and store (``s3.embedded``), so
    ``--config`` / ``ICETIDE_CONFIG`` point any command at it; no credentials (a command
    reads them from the store's folder)."""
    path = lake_config_path(settings)
    catalog = {"name": settings.catalog.name, "type": settings.catalog.type,
               "warehouse": settings.catalog.warehouse}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(yaml.safe_dump({
        "home": str(settings.home.resolve()), "catalog": catalog,
        "s3": {"embedded": True, "path_style_access": True, "region": settings.s3.region}},
        sort_keys=False))
    return path


def embedded_store(settings: Settings) -> Settings:
    """For ``s3.embedded`` settings: start the home's store detached unless it runs, put its
    credentials in this process's environment and return the settings with its endpoint."""
    if not settings.s3.embedded:
        return settings
    store = EmbeddedS3(settings.path("s3"), bucket=BUCKET)
    info = store.running()
    if info is None:
        _stable_ports(store)
        info = store.start_detached()
        log.info("started the lake's S3 store at %s (detached; `icetide catalog stop` stops "
                 "it)", info.endpoint)
    os.environ.update(info.env())
    return settings.model_copy(update={"s3": settings.s3.model_copy(
        update={"endpoint": info.endpoint, "path_style_access": True})})


def stop_embedded_store(settings: Settings) -> int | None:
    """Stop the home's detached store (``s3.embedded``); its pid, or None when none ran."""
    if not settings.s3.embedded:
        return None
    return EmbeddedS3(settings.path("s3"), bucket=BUCKET).stop_detached()
