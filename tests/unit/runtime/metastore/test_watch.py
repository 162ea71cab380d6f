"""The service's watchdog: home gone or replaced, idle timeout (no JVM)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

from icetide.runtime.metastore.watch import Watchdog, check_interval, watch


class Clients:
    """Connections open now and accepted so far, as the service's thread pool counts them."""

    def __init__(self) -> None:
        self.open, self.accepted = 0, 0

    def __call__(self) -> tuple[int, int]:
        return self.open, self.accepted


def _home(tmp_path: Path) -> Path:
    """A home's metastore folder whose state file names this process (the service). Not
    named ``metastore``: the tests' clean-up would stop the process it names."""
    root = tmp_path / "ms"
    root.mkdir()
    (root / "service.json").write_text(json.dumps({"pid": os.getpid()}))
    return root


def _dog(root: Path, idle: float | None = None, clients: Clients | None = None,
         clock: Clock | None = None) -> Watchdog:
    return Watchdog(root, root / "service.json", idle, clients or Clients(),
                    clock or Clock())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_deleted_home_is_a_reason_to_stop(tmp_path: Path) -> None:
    root = _home(tmp_path)
    dog = _dog(root)
    assert dog.reason() is None
    shutil.rmtree(root)
    assert "is gone" in (dog.reason() or "")


def test_a_home_made_again_is_another_home(tmp_path: Path) -> None:
    root = _home(tmp_path)
    dog = _dog(root)
    shutil.rmtree(root)
    root.mkdir()  # (the file system may even give it the same inode)
    assert "is gone" in (dog.reason() or "")
    (root / "service.json").write_text(json.dumps({"pid": os.getpid() + 1}))
    assert "is gone" in (dog.reason() or "")  # another service serves it now


def test_idle_counts_from_the_last_client(tmp_path: Path) -> None:
    clients, clock = Clients(), Clock()
    dog = _dog(_home(tmp_path), 60, clients, clock)
    assert dog.reason() is None
    clients.open, clients.accepted = 1, 1  # a client stays connected for long
    clock.now += 600
    assert dog.reason() is None
    clients.open = 0  # it left: idle from now on
    assert dog.reason() is None
    clock.now += 59
    assert dog.reason() is None
    clients.accepted += 1  # a short call came and went
    clock.now += 30
    assert dog.reason() is None
    clock.now += 61
    assert dog.reason() == "no client for 61s (metastore.idle_timeout: 60s)"


def test_no_idle_timeout_never_stops_an_idle_service(tmp_path: Path) -> None:
    clock = Clock()
    dog = _dog(_home(tmp_path), None, Clients(), clock)
    clock.now += 10 ** 6
    assert dog.reason() is None


def test_check_interval() -> None:
    assert check_interval(None) == 5.0
    assert check_interval(3600) == 5.0
    assert check_interval(4) == 1.0
    assert check_interval(1) == 0.5


def test_watch_sets_stop_once_there_is_a_reason(tmp_path: Path) -> None:
    root = _home(tmp_path)
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=(_dog(root), 0.05, stop))
    thread.start()
    assert not stop.wait(0.3)
    shutil.rmtree(root)
    assert stop.wait(5)
    thread.join(5)
