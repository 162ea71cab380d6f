"""A private server under a folder on loopback: what every local service of icetide shares.

The metastore, the local Trino and the dev kit's PostgreSQL, MariaDB, SeaweedFS and Kafka
brokers are each a process icetide starts in a session of its own, its output appended
to a log under its folder. Starting waits until it answers
(:func:`~icetide.runtime.retry.wait_until`: bounded, and an error naming what and after
how long); a process that exits or does not answer meanwhile is stopped and the error
quotes its log's lines since this start. Stopping is SIGTERM, then SIGKILL.

The detached ones (the metastore, Trino) outlive the process that started them: a state
file under the folder names their pid and address, and a file lock there serialises two
starts, so two icetide processes starting at once share one server.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self, TypeVar

from icetide.config import Settings
from icetide.errors import NotReadyError, RuntimeSetupError
from icetide.runtime.paths import Below
from icetide.runtime.retry import wait_until

LOOPBACK = "127.0.0.1"

log = logging.getLogger(__name__)

_Ready = TypeVar("_Ready")


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """Whether binding ``host:port`` fails (something already listens there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


def accepts(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts a TCP connection on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a reaped child or a zombie of ours does not)."""
    try:  # a child of this process that exited is a zombie until reaped
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def terminate(pid: int, timeout: float = 30.0, name: str = "server") -> None:
    """SIGTERM ``pid``, then SIGKILL when it still runs after ``timeout`` seconds."""
    os.kill(pid, signal.SIGTERM)
    try:
        wait_until(lambda: not pid_alive(pid), timeout=timeout, what=f"the exit of pid {pid}",
                   interruptible=False)  # a stop is what it finishes
    except NotReadyError:
        log.warning("%s pid %d ignored SIGTERM for %.0fs: killing it", name, pid, timeout)
        os.kill(pid, signal.SIGKILL)


def stop_process(proc: subprocess.Popen[bytes] | None, name: str, timeout: float,
                 sig: signal.Signals = signal.SIGTERM) -> None:
    """Signal ``proc`` (if still running), then SIGKILL it after ``timeout`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("%s (pid %d) ignored %s for %.0fs; killing it",
                    name, proc.pid, sig.name, timeout)
        proc.kill()
        proc.wait()


@dataclass(frozen=True)
class ServerFiles:
    """The folder of a detached server under the home (``FOLDER``): its log, its state
    file and its start lock; subclasses name them (:class:`Below`) and add their own."""

    FOLDER: ClassVar[str]
    root: Path

    @classmethod
    def of(cls, settings: Settings) -> Self:
        return cls(settings.path(cls.FOLDER))

    log: ClassVar[Below]
    #: JSON ``{"pid", "host", "port"}``: the server this folder's runs (:class:`Recorded`)
    state: ClassVar[Below]
    lock: ClassVar[Below]


@dataclass(frozen=True)
class Recorded:
    """A detached server as its state file names it: its process and address (``uri``:
    ``SCHEME://host:port``)."""

    SCHEME: ClassVar[str]
    pid: int
    host: str
    port: int

    @property
    def uri(self) -> str:
        return f"{self.SCHEME}://{self.host}:{self.port}"

    @classmethod
    def read(cls, path: Path) -> Self | None:
        """The server ``path`` names, if its process is alive (not asked: no connect)."""
        try:
            data = json.loads(path.read_text())
            state = cls(int(data["pid"]), str(data["host"]), int(data["port"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return state if pid_alive(state.pid) else None

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({"pid": self.pid, "host": self.host, "port": self.port}))


@contextmanager
def start_lock(files: ServerFiles) -> Iterator[None]:
    """Hold the folder's start lock (the folder created owner-only): one start at a time."""
    files.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    with files.lock.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class LocalServer:
    """A server process: started by :meth:`spawn`, waited for by :meth:`await_ready`,
    stopped by :meth:`stop`. Subclasses name it (``NAME``) and its log
    (``log_path``, a :class:`~icetide.runtime.paths.Below` say)."""

    NAME: str
    STOP_TIMEOUT_S: ClassVar[float] = 30.0
    log_path: Path
    _proc: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    def spawn(self, cmd: list[str], *, env: Mapping[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """Start ``cmd`` in a session of its own (Ctrl-C reaches icetide only, which stops
        it), its output appended to the log."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as out:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                          start_new_session=True)
        return self._proc

    def await_ready(self, ready: Callable[[], _Ready | None], *, timeout: float, what: str,
               interval: float = 0.1,
               ignoring: type[BaseException] | tuple[type[BaseException], ...] = (),
               hint: str = "") -> _Ready:
        """Wait until ``ready()`` is truthy and return it; when the process exits first,
        or ``timeout`` passes, stop it and raise, quoting the log."""
        proc = self._proc

        def check() -> _Ready | None:
            if proc is None or proc.poll() is not None:
                code = None if proc is None else proc.returncode
                raise RuntimeSetupError(f"{self.NAME} exited with code {code} before {what} "
                                        f"answered; {self._see_log(hint)}")
            return ready()

        try:
            return wait_until(check, timeout=timeout, what=what, interval=interval,
                              ignoring=ignoring, detail=lambda: self._see_log(hint))
        except BaseException:
            self.stop()
            raise

    def _see_log(self, hint: str = "") -> str:
        return f"{hint}its log {self.log_path} ends:\n{self.tail()}"

    def tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines its log got since this start."""
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(self._log_offset)
                text = fh.read().decode(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, SIGKILL after ``timeout`` (default ``STOP_TIMEOUT_S``); idempotent."""
        proc, self._proc = self._proc, None
        stop_process(proc, self.NAME, self.STOP_TIMEOUT_S if timeout is None else timeout)


class Detached(LocalServer):
    """A server that outlives the process starting it (its state file names it to every
    later one); a start that fails removes that file with the process."""

    def __init__(self, name: str, files: ServerFiles) -> None:
        self.NAME = name
        self.files = files
        self.log_path = files.log

    def stop(self, timeout: float | None = None) -> None:
        super().stop(timeout)
        self.files.state.unlink(missing_ok=True)
