"""What every embedded server shares: loopback ports, stopping its process, and being a
context manager (``with`` starts it and stops it)."""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Generic, TypeVar

LOOPBACK = "127.0.0.1"
#: What a server's ``start`` returns (how to reach it, or the server itself).
_Started = TypeVar("_Started", covariant=True)

log = logging.getLogger(__name__)


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


class EmbeddedServer(ABC, Generic[_Started]):
    """A server this process starts and stops; ``with server as reached:`` starts it and
    stops it on the way out, whatever happened inside."""

    @abstractmethod
    def start(self) -> _Started:
        """Start the server (when it does not run) and return how to reach it."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server (no-op when it does not run)."""

    def __enter__(self) -> _Started:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
