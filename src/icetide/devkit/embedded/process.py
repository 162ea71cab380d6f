"""What every embedded server shares: being a context manager (``with`` starts it and
stops it), beside the loopback ports and the process handling of
:mod:`icetide.runtime.local_server` it is built on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Generic, TypeVar

from icetide.runtime.local_server import LOOPBACK, free_port, port_in_use, stop_process

__all__ = ["LOOPBACK", "EmbeddedServer", "free_port", "port_in_use", "stop_process"]

#: What a server's ``start`` returns (how to reach it, or the server itself).
_Started = TypeVar("_Started", covariant=True)


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
