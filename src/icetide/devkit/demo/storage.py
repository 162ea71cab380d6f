"""Where the demo keeps its lake: the home's directory (default) or an embedded
S3-compatible store (``icetide demo --storage s3``), as the seeds keep theirs on S3."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from typing import Literal

from icetide.config import Settings
from icetide.devkit.embedded.process import port_in_use
from icetide.devkit.embedded.seaweed import EmbeddedS3

log = logging.getLogger(__name__)

Storage = Literal["local", "s3"]
#: the S3 demo's own home under the configured one: its metastore, MariaDB and store
S3_HOME = "s3-lake"
BUCKET = "lake"


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
    """Start the store under the home, put its credentials in this process's environment
    (where every S3 client of icetide reads them) and yield settings for a lake on it."""
    store = EmbeddedS3(settings.path("s3"), bucket=BUCKET)
    _stable_ports(store)
    with store as info:
        saved = {k: os.environ.get(k) for k in info.env()}
        os.environ.update(info.env())
        try:
            yield settings.model_copy(update={
                "catalog": settings.catalog.model_copy(
                    update={"warehouse": f"s3://{BUCKET}/warehouse"}),
                "s3": settings.s3.model_copy(
                    update={"endpoint": info.endpoint, "path_style_access": True})})
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
