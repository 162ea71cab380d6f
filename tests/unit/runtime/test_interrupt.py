"""The one wait: :func:`pause` waits its time, ends early on the caller's event, and a stop
request ends it (unless it is not interruptible)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from icetide.runtime.interrupt import Interrupted, clear_stop, pause, request_stop


@pytest.fixture(autouse=True)
def _no_stop_left() -> Iterator[None]:
    clear_stop()
    yield
    clear_stop()


@pytest.mark.parametrize("woken", [None, threading.Event()])
def test_pause_waits_its_time(woken: threading.Event | None) -> None:
    began = time.monotonic()
    pause(0.12, woken)
    assert 0.12 <= time.monotonic() - began < 0.5


def test_the_callers_event_ends_the_wait_early() -> None:
    woken = threading.Event()
    threading.Timer(0.1, woken.set).start()
    began = time.monotonic()
    pause(30.0, woken)
    assert time.monotonic() - began < 2
    began = time.monotonic()
    pause(30.0, woken, interruptible=False)  # already set: no wait
    assert time.monotonic() - began < 0.1


@pytest.mark.parametrize("woken", [None, threading.Event()])
def test_a_stop_request_ends_the_wait(woken: threading.Event | None) -> None:
    threading.Timer(0.1, request_stop).start()
    began = time.monotonic()
    with pytest.raises(Interrupted):
        pause(30.0, woken)
    assert time.monotonic() - began < 2


def test_a_wait_that_is_not_interruptible_ignores_a_stop_request() -> None:
    request_stop()
    began = time.monotonic()
    pause(0.1, interruptible=False)
    assert time.monotonic() - began >= 0.1
