"""The one retry helper: what it retries, how it waits, when it gives up, and that a stop
request ends it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from tenacity import RetryCallState, Retrying, wait_none

from icetide.errors import NotReadyError, RuntimeSetupError, SourceUnavailableError
from icetide.runtime.interrupt import Interrupted, clear_stop, request_stop
from icetide.runtime.retry import (
    Failure,
    backoff,
    patience,
    restart,
    retrying,
    stop_after_counted,
    wait_until,
)


@pytest.fixture(autouse=True)
def _no_stop_left() -> Iterator[None]:
    clear_stop()
    yield
    clear_stop()


class Flaky:
    """Fails ``times`` times with ``error``, then returns the number of calls."""

    def __init__(self, times: int, error: type[Exception] = ConnectionError) -> None:
        self.times, self.error, self.calls = times, error, 0

    def __call__(self) -> int:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error(f"failure {self.calls}")
        return self.calls


def test_retries_what_it_names_until_it_succeeds_and_reports_each_wait() -> None:
    waits: list[tuple[int, float]] = []
    flaky = Flaky(3)
    done = retrying(ConnectionError, wait=backoff(0.01, 0.02),
                    on_retry=lambda f, s: waits.append((f.attempts, s)))(flaky)
    assert done == 4
    assert waits == [(1, 0.01), (2, 0.02), (3, 0.02)]


def test_other_errors_propagate_at_once() -> None:
    flaky = Flaky(1, ValueError)
    with pytest.raises(ValueError, match="failure 1"):
        retrying(ConnectionError, wait=wait_none())(flaky)
    assert flaky.calls == 1


def test_a_predicate_selects_what_is_retried() -> None:
    flaky = Flaky(2)
    assert retrying(lambda e: "failure" in str(e), wait=wait_none())(flaky) == 3


def test_backoff_doubles_up_to_its_maximum() -> None:
    delays = backoff(0.5, 3.0)
    state = RetryCallState(Retrying(), None, (), {})
    waits = []
    for n in range(1, 6):
        state.attempt_number = n
        waits.append(delays(state))
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_patience_gives_up_before_a_wait_would_exceed_it_with_the_callers_error() -> None:
    seen: list[Failure] = []

    def give_up(f: Failure) -> Exception:
        seen.append(f)
        return SourceUnavailableError(f"gave up after {f.attempts} attempts")

    flaky = Flaky(100)
    began = time.monotonic()
    with pytest.raises(SourceUnavailableError, match="gave up after") as info:
        retrying(ConnectionError, wait=backoff(0.05, 0.1), stop=patience(0.4),
                 give_up=give_up)(flaky)
    assert time.monotonic() - began < 0.4
    assert isinstance(info.value.__cause__, ConnectionError)
    assert seen[0].attempts == flaky.calls > 2 and 0 < seen[0].waited < 0.4


def test_without_give_up_the_last_error_is_raised() -> None:
    flaky = Flaky(100)
    with pytest.raises(ConnectionError, match="failure 3"):
        retrying(ConnectionError, wait=wait_none(), stop=stop_after_counted(2, bool))(flaky)


def test_stop_after_counted_limits_only_the_counted_failures() -> None:
    errors = iter([KeyError("a"), ConnectionError("c"), KeyError("b"), ConnectionError("c"),
                   ConnectionError("c")])

    def fail() -> None:
        raise next(errors)

    with pytest.raises(ConnectionError):
        retrying((KeyError, ConnectionError), wait=wait_none(),
                 stop=stop_after_counted(2, lambda e: isinstance(e, ConnectionError)))(fail)
    assert next(errors, None) is None  # both KeyErrors were retried without counting


def test_a_stop_request_interrupts_the_wait() -> None:
    flaky = Flaky(100)
    threading.Timer(0.2, request_stop).start()
    began = time.monotonic()
    with pytest.raises(Interrupted):
        retrying(ConnectionError, wait=backoff(30.0, 30.0))(flaky)
    assert time.monotonic() - began < 5 and flaky.calls == 1


def test_after_a_stop_request_the_next_failure_ends_it() -> None:
    request_stop()
    flaky = Flaky(100)
    with pytest.raises(Interrupted):
        retrying(ConnectionError, wait=wait_none())(flaky)
    assert flaky.calls == 1


def test_restart_counts_failures_afresh_after_progress() -> None:
    waits: list[tuple[int, float]] = []
    progress = iter([False, False, True, False, False])
    calls = 0
    for attempt in retrying(ConnectionError, wait=backoff(0.01, 1.0),
                            on_retry=lambda f, s: waits.append((f.attempts, s))):
        with attempt:
            calls += 1
            if calls <= 5:
                raise ConnectionError("down")
        if next(progress, False):
            restart(attempt)
    assert calls == 6
    assert waits == [(1, 0.01), (2, 0.02), (1, 0.01), (2, 0.02), (3, 0.04)]


def test_interrupted_is_no_failure() -> None:
    assert not isinstance(Interrupted(), Exception)  # no `except Exception` counts it
    assert isinstance(Interrupted(), KeyboardInterrupt)  # the command line exits 130


class Countdown:
    """Not ready (``None``) for ``times`` calls, raising ``error`` on them when given; then
    ready with the number of calls."""

    def __init__(self, times: int, error: Exception | None = None) -> None:
        self.times, self.error, self.calls = times, error, 0

    def __call__(self) -> int | None:
        self.calls += 1
        if self.calls <= self.times:
            if self.error is not None:
                raise self.error
            return None
        return self.calls


def test_wait_until_returns_what_ready_returns_once_it_is_truthy() -> None:
    assert wait_until(Countdown(3), timeout=5, what="the thing", interval=0.01) == 4


def test_wait_until_names_what_and_how_long_when_the_bound_passes() -> None:
    began = time.monotonic()
    with pytest.raises(NotReadyError) as caught:
        wait_until(lambda: False, timeout=0.3, what="the test server on 127.0.0.1:1",
                   interval=0.05, detail=lambda: "see its log")
    assert 0.3 <= time.monotonic() - began < 2.0
    assert isinstance(caught.value, RuntimeSetupError)
    message = str(caught.value)
    assert message.startswith("the test server on 127.0.0.1:1 did not become ready after 0.")
    assert message.endswith("; see its log")
    assert caught.value.what == "the test server on 127.0.0.1:1"
    assert caught.value.waited >= 0.3


def test_wait_until_takes_ignored_errors_for_not_yet_and_names_the_last() -> None:
    assert wait_until(Countdown(2, OSError("refused")), timeout=5, what="x", interval=0.01,
                      ignoring=OSError) == 3
    with pytest.raises(NotReadyError, match="last: refused") as caught:
        wait_until(Countdown(1000, OSError("refused")), timeout=0.1, what="x",
                   interval=0.01, ignoring=OSError)
    assert isinstance(caught.value.__cause__, OSError)


def test_wait_until_lets_other_errors_end_the_wait_at_once() -> None:
    ready = Countdown(5, ValueError("it exited"))
    with pytest.raises(ValueError, match="it exited"):
        wait_until(ready, timeout=5, what="x", interval=0.01, ignoring=OSError)
    assert ready.calls == 1


def test_wait_until_waits_as_a_tenacity_wait_says() -> None:
    ready = Countdown(4)
    began = time.monotonic()
    assert wait_until(ready, timeout=5, what="x", interval=backoff(0.01, 0.02)) == 5
    assert time.monotonic() - began >= 0.01 + 0.02 + 0.02 + 0.02


def test_a_stop_request_interrupts_wait_until_unless_it_is_not_interruptible() -> None:
    threading.Timer(0.2, request_stop).start()
    began = time.monotonic()
    with pytest.raises(Interrupted):
        wait_until(lambda: False, timeout=30, what="x", interval=5)
    assert time.monotonic() - began < 2
    ready = Countdown(3)
    assert wait_until(ready, timeout=5, what="x", interval=0.01, interruptible=False) == 4
