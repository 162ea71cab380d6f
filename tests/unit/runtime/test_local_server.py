"""A private server on loopback: started, waited for, its log quoted when it fails,
stopped; a detached one's state file and start lock."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from icetide.errors import NotReadyError, RuntimeSetupError
from icetide.runtime.local_server import (
    LOOPBACK,
    Detached,
    LocalServer,
    Recorded,
    ServerFiles,
    accepts,
    free_port,
    pid_alive,
    start_lock,
    terminate,
)
from icetide.runtime.paths import Below


class PyServer(LocalServer):
    """A Python one-liner as the server, its log under ``root``."""

    NAME = "the test server"
    STOP_TIMEOUT_S = 5.0
    log_path = Below("server.log")

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(self, code: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-c", code], cwd=self.root)


def _serve(port: int) -> str:
    return ("import socket, time\nprint('serving', flush=True)\n"
            f"s = socket.create_server(('{LOOPBACK}', {port}))\ntime.sleep(60)")


def test_a_server_that_answers_is_returned_and_stopped(tmp_path: Path) -> None:
    server, port = PyServer(tmp_path), free_port()
    proc = server.run(_serve(port))
    assert server.await_ready(lambda: accepts(LOOPBACK, port), timeout=20,
                              what=f"the test server on {port}") is True
    server.stop()
    assert proc.poll() is not None and not accepts(LOOPBACK, port)
    server.stop()  # idempotent


def test_an_exit_while_starting_quotes_this_starts_log_lines(tmp_path: Path) -> None:
    server = PyServer(tmp_path)
    server.log_path.write_text("an older start's line\n")
    server.run("import sys; print('cannot bind: Address already in use'); sys.exit(3)")
    with pytest.raises(RuntimeSetupError) as caught:
        server.await_ready(lambda: False, timeout=20, what="the test server", hint="is it? ")
    message = str(caught.value)
    assert "the test server exited with code 3 before the test server answered" in message
    assert "is it? " in message and "Address already in use" in message
    assert "older start" not in message


def test_a_server_that_never_answers_is_stopped_after_the_bound(tmp_path: Path) -> None:
    server = PyServer(tmp_path)
    proc = server.run("import time; print('still warming up', flush=True); time.sleep(60)")
    began = time.monotonic()
    with pytest.raises(NotReadyError) as caught:
        server.await_ready(lambda: False, timeout=1.0, what="the test server")
    assert 1.0 <= time.monotonic() - began < 10
    assert caught.value.what == "the test server"
    assert "still warming up" in str(caught.value)
    assert proc.poll() is not None


@dataclass(frozen=True)
class Files(ServerFiles):
    FOLDER = "test"
    log = Below("test.log")
    state = Below("test.json")
    lock = Below("start.lock")


@dataclass(frozen=True)
class State(Recorded):
    SCHEME = "test"


def test_a_state_file_names_a_live_process_only(tmp_path: Path) -> None:
    files = Files(tmp_path / "test")
    files.root.mkdir()
    assert State.read(files.state) is None
    State(os.getpid(), LOOPBACK, 1234).write(files.state)
    assert State.read(files.state) == State(os.getpid(), LOOPBACK, 1234)
    assert State(os.getpid(), LOOPBACK, 1234).uri == "test://127.0.0.1:1234"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    State(dead.pid, LOOPBACK, 1234).write(files.state)
    assert State.read(files.state) is None


def test_the_start_lock_makes_the_folder_owner_only(tmp_path: Path) -> None:
    files = Files(tmp_path / "home" / "test")
    with start_lock(files):
        assert files.lock.exists()
    assert stat.S_IMODE(files.root.stat().st_mode) == 0o700


def test_a_failed_detached_start_removes_its_state_file(tmp_path: Path) -> None:
    files = Files(tmp_path)
    server = Detached("the detached test server", files)
    proc = server.spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    State(proc.pid, LOOPBACK, 1).write(files.state)
    with pytest.raises(NotReadyError, match="the detached test server"):
        server.await_ready(lambda: False, timeout=0.5, what="the detached test server")
    assert not files.state.exists() and proc.poll() is not None


def test_terminate_ends_a_process_by_pid(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert pid_alive(proc.pid)
    terminate(proc.pid, timeout=10, name="test")
    assert not pid_alive(proc.pid)
